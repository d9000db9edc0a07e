"""The experience store all three agents share: PostgreSQL + pgvector, one class.

Writes are transactional and safe under concurrent processes: inserts take an advisory
lock per (scope, kind), so two runs writing the same lesson at once store it once, and a
unique index on active content catches anything else. Reads are pull-based: `retrieve`
returns references, `get` pulls bodies.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg.types.json import Jsonb

from dia_assets.platform.embeddings import Embedder, make_embedder
from dia_assets.platform.memory import migrations
from dia_assets.platform.memory.bulk import import_examples
from dia_assets.platform.memory.conflicts import (
    ConflictJudge,
    ConflictPolicy,
    JudgeVerdict,
    content_hash,
    is_candidate_conflict,
)
from dia_assets.platform.memory.connection import ConnectionTarget
from dia_assets.platform.memory.events import write_event
from dia_assets.platform.memory.migrations import BULK_LOCK, SCHEMA
from dia_assets.platform.memory.models import (
    ConflictRecord,
    Evidence,
    ImportReport,
    InsertResult,
    MemoryItem,
    MemoryRef,
    NewMemory,
    Status,
    Tier,
    VerificationResult,
    VersionEdge,
)
from dia_assets.platform.memory.retrieval import (
    MemoryFilter,
    RetrievalWeights,
    filter_clause,
    fuse,
    hybrid_query,
)
from dia_assets.platform.memory.verify import ProbeRunner, SupportsProbe, as_runner, check

T = TypeVar("T")

ITEM_COLUMNS = (
    "id, tier, kind, title, body, probe_sql, question, evidence, notes, scope, content_hash, "
    "importance, confidence, use_count, success_count, verify_pass_count, verify_fail_count, "
    "status, created_at, updated_at, last_used_at, last_verified_at"
)
_ITEM_FIELDS = [c.strip() for c in ITEM_COLUMNS.split(",")]
_OUTCOME_RATE = 0.1  # importance moves 10% of the way towards 1 (success) or 0 (failure)


def item_from_row(row: Sequence[Any]) -> MemoryItem:
    return MemoryItem.model_validate(dict(zip(_ITEM_FIELDS, row, strict=True)))


def _insert_lock_key(scope: str, kind: str) -> str:
    return f"dia-memory-insert:{scope}:{kind}"


class MemoryStore:
    """Shared memory on one PostgreSQL database (embedded by default, external by URL)."""

    def __init__(
        self,
        target: ConnectionTarget,
        embedder: Embedder,
        *,
        policy: ConflictPolicy | None = None,
        judge: ConflictJudge | None = None,
        ef_search: int = 80,
    ) -> None:
        self.target = target
        self.embedder = embedder
        self.policy = policy or ConflictPolicy()
        self.judge = judge
        self.ef_search = ef_search
        self._conn: psycopg.Connection | None = None
        self._mutex = threading.RLock()

    @classmethod
    def open(
        cls,
        url: str | None = None,
        pgdata: str | Path | None = None,
        embedder: Embedder | None = None,
        dbname: str | None = None,
        **kwargs: Any,
    ) -> MemoryStore:
        """Connect (starting the embedded server if needed) and migrate, failing early."""
        target = ConnectionTarget(url=url, pgdata=Path(pgdata) if pgdata else None, dbname=dbname)
        store = cls(target, embedder or make_embedder(), **kwargs)
        store.connection()
        return store

    # -- connection -------------------------------------------------------------------

    def connection(self) -> psycopg.Connection:
        """The live connection, (re)opened, migrated and configured on demand."""
        with self._mutex:
            if self._conn is not None and not self._conn.closed and not self._conn.broken:
                return self._conn
            conn = self.target.connect()
            conn.autocommit = True
            try:
                migrations.migrate(conn, self.embedder.name, self.embedder.dim)
                register_vector(conn)
                conn.execute(f"SET hnsw.ef_search = {int(self.ef_search)}")
                self._repair_indexes(conn)
            except Exception:
                conn.close()
                raise
            self._conn = conn
            return conn

    def _repair_indexes(self, conn: psycopg.Connection) -> None:
        """Rebuild search indexes a crashed bulk load left dropped (unless one is running)."""
        if not migrations.missing_search_indexes(conn):
            return
        if conn.execute("SELECT pg_try_advisory_lock(%s)", (BULK_LOCK,)).fetchone()[0]:  # type: ignore[index]
            try:
                migrations.build_search_indexes(conn)
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (BULK_LOCK,))

    def with_connection(self, op: Callable[[psycopg.Connection], T]) -> T:
        """Run `op`; on a lost connection (server restarted or crashed) reconnect once and retry."""
        with self._mutex:
            try:
                return op(self.connection())
            except (psycopg.OperationalError, psycopg.InterfaceError):
                conn = self._conn
                if conn is not None and not conn.closed and not conn.broken:
                    raise  # a real error on a healthy connection: do not retry
                self._drop_connection()
                return op(self.connection())

    def _drop_connection(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def close(self) -> None:
        """Close the connection; the embedded server stops when its last process exits."""
        with self._mutex:
            self._drop_connection()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def describe(self) -> str:
        return f"{self.target.describe()} ({self.embedder.name}, {self.embedder.dim}-d)"

    def _vector(self, text: str) -> np.ndarray:
        vec = self.embedder.embed([text])[0]
        if vec.shape[0] != self.embedder.dim:
            raise migrations.EmbeddingMismatch(
                f"embedder {self.embedder.name} produced {vec.shape[0]}-d, store holds {self.embedder.dim}-d"
            )
        return vec

    # -- insert (Algorithm 1) -----------------------------------------------------------

    def insert(
        self,
        new: NewMemory,
        judge: ConflictJudge | None = None,
        policy: ConflictPolicy | None = None,
    ) -> InsertResult:
        """Insert with conflict handling: duplicates merge, conflicts become linked versions."""
        judge = judge or self.judge
        policy = policy or self.policy
        new = new.model_copy(
            update={
                "evidence": [
                    e if e.scope else e.model_copy(update={"scope": new.scope})
                    for e in new.evidence
                ]
            }
        )
        vec = self._vector(new.embedding_text())
        chash = content_hash(new)

        def op(conn: psycopg.Connection) -> InsertResult:
            with conn.transaction():
                conn.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                    (_insert_lock_key(new.scope, new.kind.value),),
                )
                dup = self._find_duplicate(conn, new, chash)
                if dup is not None:
                    self._merge_evidence(conn, dup[0], dup[1], new.evidence)
                    self._event(conn, dup[0], "duplicate", new.scope, {"title": new.title})
                    return InsertResult(id=dup[0], action="duplicate")
                found = (
                    []
                    if new.tier == Tier.EXAMPLE
                    else self._conflicts(conn, new, vec, judge, policy)
                )
                decided = [
                    (old, sim, *policy.resolve(new, old, verdict)) for old, sim, verdict in found
                ]
                status = (
                    Status.SUPERSEDED
                    if any(r == "old_wins" for _, _, r, _ in decided)
                    else Status.ACTIVE
                )
                new_id = self._insert_row(conn, new, chash, vec, status)
                records = []
                for old, sim, resolution, rule in decided:
                    if resolution == "new_wins":
                        conn.execute(
                            f"UPDATE {SCHEMA}.items SET status = 'superseded', updated_at = now() WHERE id = %s",
                            (old.id,),
                        )
                    detail = {"resolution": resolution, "rule": rule, "similarity": round(sim, 4)}
                    conn.execute(
                        f"INSERT INTO {SCHEMA}.edges (src_id, dst_id, relation, detail) "
                        "VALUES (%s, %s, 'version', %s) ON CONFLICT DO NOTHING",
                        (old.id, new_id, Jsonb(detail)),
                    )
                    self._event(conn, old.id, "conflict", new.scope, {"with": new_id, **detail})
                    records.append(
                        ConflictRecord(
                            other_id=old.id, resolution=resolution, rule=rule, similarity=sim
                        )
                    )
                self._event(conn, new_id, "inserted", new.scope, {"status": status.value})
                return InsertResult(id=new_id, action="inserted", status=status, conflicts=records)

        return self.with_connection(op)

    def _find_duplicate(
        self, conn: psycopg.Connection, new: NewMemory, chash: str
    ) -> tuple[int, list[Any]] | None:
        """Same content already active: in the same tier and scope, or (for a lesson) as a
        cross-session lesson, which applies everywhere."""
        if new.tier == Tier.EXAMPLE:
            where = "tier = 'example' AND scope = %(scope)s"
        else:
            where = "tier <> 'example' AND (scope = %(scope)s OR tier = 'cross_session')"
        row = conn.execute(
            f"SELECT id, evidence FROM {SCHEMA}.items WHERE {where} AND kind = %(kind)s "
            "AND content_hash = %(hash)s AND status = 'active' ORDER BY id LIMIT 1",
            {"scope": new.scope, "kind": new.kind.value, "hash": chash},
        ).fetchone()
        return (row[0], row[1]) if row else None

    def _insert_row(
        self, conn: psycopg.Connection, new: NewMemory, chash: str, vec: np.ndarray, status: Status
    ) -> int:
        row = conn.execute(
            f"""INSERT INTO {SCHEMA}.items (tier, kind, title, body, probe_sql, question, evidence,
                notes, scope, content_hash, embedding, importance, confidence, status)
            VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) RETURNING id""",
            (
                new.tier.value,
                new.kind.value,
                new.title,
                new.body,
                new.probe_sql,
                new.question,
                Jsonb([e.model_dump(mode="json") for e in new.evidence]),
                Jsonb(new.notes),
                new.scope,
                chash,
                vec,
                new.importance,
                new.confidence,
                status.value,
            ),
        ).fetchone()
        assert row is not None
        return int(row[0])

    def _conflicts(
        self,
        conn: psycopg.Connection,
        new: NewMemory,
        vec: np.ndarray,
        judge: ConflictJudge | None,
        policy: ConflictPolicy,
    ) -> list[tuple[MemoryItem, float, JudgeVerdict | None]]:
        """Steps 1-2 of Algorithm 1: anchors by exact vector search, their graph neighbours,
        then the rule (and the judge, when configured) decides which conflict."""
        anchors = conn.execute(
            f"""WITH c AS MATERIALIZED (
                    SELECT * FROM {SCHEMA}.items i
                    WHERE i.status = 'active' AND i.kind = %(kind)s AND i.tier <> 'example'
                      AND (i.scope = %(scope)s OR i.tier = 'cross_session'))
                SELECT {ITEM_COLUMNS}, 1 - (embedding <=> %(q)s) FROM c
                ORDER BY embedding <=> %(q)s LIMIT %(k)s""",
            {"kind": new.kind.value, "scope": new.scope, "q": vec, "k": policy.neighbours},
        ).fetchall()
        ids = [r[0] for r in anchors]
        related = (
            conn.execute(
                f"""SELECT {ITEM_COLUMNS}, 1 - (embedding <=> %(q)s) FROM {SCHEMA}.items
                WHERE status = 'active' AND kind = %(kind)s AND NOT id = ANY(%(ids)s) AND id IN (
                    SELECT dst_id FROM {SCHEMA}.edges WHERE src_id = ANY(%(ids)s)
                    UNION SELECT src_id FROM {SCHEMA}.edges WHERE dst_id = ANY(%(ids)s))""",
                {"q": vec, "kind": new.kind.value, "ids": ids},
            ).fetchall()
            if ids
            else []
        )
        found: list[tuple[MemoryItem, float, JudgeVerdict | None]] = []
        for row in [*anchors, *related]:
            old, sim = item_from_row(row[:-1]), float(row[-1])
            if not is_candidate_conflict(new, old, sim, policy.min_similarity):
                continue
            verdict = judge(new, old) if judge is not None else None
            if verdict == JudgeVerdict.NO_CONFLICT:
                continue
            found.append((old, sim, verdict))
        return found

    def _merge_evidence(
        self, conn: psycopg.Connection, item_id: int, current: list[Any], extra: Iterable[Evidence]
    ) -> None:
        have = [Evidence.model_validate(e) for e in current]
        keys = {e.key() for e in have}
        added = [e for e in extra if e.key() not in keys]
        if added:
            merged = [e.model_dump(mode="json") for e in [*have, *added]]
            conn.execute(
                f"UPDATE {SCHEMA}.items SET evidence = %s, updated_at = now() WHERE id = %s",
                (Jsonb(merged), item_id),
            )

    def _event(
        self,
        conn: psycopg.Connection,
        item_id: int | None,
        event: str,
        scope: str | None,
        detail: dict[str, Any],
    ) -> None:
        write_event(conn, item_id, event, scope, detail)

    # -- bulk import of examples ----------------------------------------------------------

    def import_examples(
        self, items: Sequence[NewMemory], reindex_threshold: int | None = None
    ) -> ImportReport:
        """Bulk load examples (see `bulk.import_examples`: load first, index after)."""
        return import_examples(self, items, reindex_threshold)

    # -- reads --------------------------------------------------------------------------

    def retrieve(
        self,
        query: str,
        k: int = 10,
        filters: MemoryFilter | None = None,
        weights: RetrievalWeights | None = None,
        candidates: int | None = None,
    ) -> list[MemoryRef]:
        """Hybrid top-k references; pull bodies with `get` (pull-based memory, DIA §3.2)."""
        f = filters or MemoryFilter()
        n = min(max(candidates or 4 * k, k), self.ef_search)
        vec = self._vector(query)
        query_sql, params = hybrid_query(f)
        params.update({"q": vec, "n": n, "text": query, "cap": 1000})

        def op(conn: psycopg.Connection) -> list[tuple[Any, ...]]:
            rows = conn.execute(query_sql, params).fetchall()
            if not rows or rows[0][-1] < n:
                # Selective filters can starve an approximate index scan: go exact, the
                # filtered set is small when that happens.
                rows = conn.execute(hybrid_query(f, exact=True)[0], params).fetchall()
            return rows

        return fuse(self.with_connection(op), weights or RetrievalWeights(), k)

    def get(self, item_id: int) -> MemoryItem:
        items = self.get_many([item_id])
        if not items:
            raise KeyError(f"no memory item {item_id}")
        return items[0]

    def get_many(self, ids: Sequence[int]) -> list[MemoryItem]:
        """Bodies for the given ids, in the order asked."""
        rows = self.with_connection(
            lambda c: c.execute(
                f"SELECT {ITEM_COLUMNS} FROM {SCHEMA}.items WHERE id = ANY(%s)", (list(ids),)
            ).fetchall()
        )
        by_id = {r[0]: item_from_row(r) for r in rows}
        return [by_id[i] for i in ids if i in by_id]

    def list_items(
        self, filters: MemoryFilter | None = None, limit: int = 100, offset: int = 0
    ) -> list[MemoryItem]:
        from psycopg import sql

        where, params = filter_clause(filters or MemoryFilter())
        query = sql.SQL(
            "SELECT {cols} FROM {schema}.items i WHERE {where} ORDER BY i.id LIMIT %(lim)s OFFSET %(off)s"
        ).format(cols=sql.SQL(ITEM_COLUMNS), schema=sql.Identifier(SCHEMA), where=where)
        params.update({"lim": limit, "off": offset})
        return [
            item_from_row(r)
            for r in self.with_connection(lambda c: c.execute(query, params).fetchall())
        ]

    def history(self, item_id: int) -> tuple[list[MemoryItem], list[VersionEdge]]:
        """The item's connected component in the version graph, oldest first."""

        def op(conn: psycopg.Connection) -> tuple[list[MemoryItem], list[VersionEdge]]:
            ids = [
                r[0]
                for r in conn.execute(
                    f"""WITH RECURSIVE g(id) AS (
                        SELECT %s::bigint
                        UNION
                        SELECT CASE WHEN e.src_id = g.id THEN e.dst_id ELSE e.src_id END
                        FROM {SCHEMA}.edges e JOIN g ON g.id IN (e.src_id, e.dst_id))
                    SELECT id FROM g""",
                    (item_id,),
                ).fetchall()
            ]
            items = [
                item_from_row(r)
                for r in conn.execute(
                    f"SELECT {ITEM_COLUMNS} FROM {SCHEMA}.items WHERE id = ANY(%s) ORDER BY created_at, id",
                    (ids,),
                ).fetchall()
            ]
            edges = [
                VersionEdge(src_id=r[0], dst_id=r[1], relation=r[2], detail=r[3], created_at=r[4])
                for r in conn.execute(
                    f"SELECT src_id, dst_id, relation, detail, created_at FROM {SCHEMA}.edges "
                    "WHERE src_id = ANY(%s) OR dst_id = ANY(%s) ORDER BY created_at",
                    (ids, ids),
                ).fetchall()
            ]
            return items, edges

        return self.with_connection(op)

    def counts(self, status: Status | None = Status.ACTIVE) -> dict[str, dict[str, int]]:
        """Item counts per tier and kind (active items by default; None for all statuses)."""
        rows = self.with_connection(
            lambda c: c.execute(
                f"SELECT tier, kind, count(*) FROM {SCHEMA}.items WHERE %(s)s::text IS NULL OR status = %(s)s "
                "GROUP BY tier, kind ORDER BY tier, kind",
                {"s": status.value if status else None},
            ).fetchall()
        )
        out: dict[str, dict[str, int]] = {}
        for tier, kind, n in rows:
            out.setdefault(tier, {})[kind] = int(n)
        return out

    def status_counts(self) -> dict[str, int]:
        rows = self.with_connection(
            lambda c: c.execute(
                f"SELECT status, count(*) FROM {SCHEMA}.items GROUP BY status"
            ).fetchall()
        )
        return {s: int(n) for s, n in rows}

    def events(self, item_id: int) -> list[dict[str, Any]]:
        rows = self.with_connection(
            lambda c: c.execute(
                f"SELECT event, scope, detail, at FROM {SCHEMA}.events WHERE item_id = %s ORDER BY id",
                (item_id,),
            ).fetchall()
        )
        return [{"event": e, "scope": s, "detail": d, "at": a.isoformat()} for e, s, d, a in rows]

    # -- use: verification and outcomes ---------------------------------------------------------

    def verify(
        self, ids: Sequence[int], runner: ProbeRunner | SupportsProbe, scope: str | None = None
    ) -> list[VerificationResult]:
        """Run each item's probe read-only on the current database and record the outcome."""
        run = as_runner(runner)
        results = [check(item, run, scope) for item in self.get_many(ids)]

        def op(conn: psycopg.Connection) -> None:
            with conn.transaction():
                for r in results:
                    if r.outcome == "no_probe":
                        continue
                    column = "verify_pass_count" if r.usable else "verify_fail_count"
                    conn.execute(
                        f"UPDATE {SCHEMA}.items SET {column} = {column} + 1, last_verified_at = now() WHERE id = %s",
                        (r.item_id,),
                    )
                    self._event(conn, r.item_id, f"probe_{r.outcome}", scope, {"detail": r.detail})

        self.with_connection(op)
        return results

    def retrieve_verified(
        self,
        query: str,
        runner: ProbeRunner | SupportsProbe,
        scope: str | None = None,
        k: int = 5,
        candidates: int = 20,
        filters: MemoryFilter | None = None,
    ) -> list[tuple[MemoryRef, VerificationResult]]:
        """Retrieve, verify, and keep only items whose probe confirms here (or examples)."""
        f = (filters or MemoryFilter()).model_copy(update={"scope": scope})
        refs = self.retrieve(query, k=candidates, filters=f)
        results = {r.item_id: r for r in self.verify([r.id for r in refs], runner, scope)}
        usable = [
            (ref, results[ref.id]) for ref in refs if ref.id in results and results[ref.id].usable
        ]
        return usable[:k]

    def record_outcome(
        self, item_id: int, success: bool, scope: str | None = None, note: str = ""
    ) -> MemoryItem:
        """An item was used in an answer: count it, and move importance towards the outcome."""

        def op(conn: psycopg.Connection) -> MemoryItem:
            with conn.transaction():
                row = conn.execute(
                    f"""UPDATE {SCHEMA}.items SET use_count = use_count + 1,
                        success_count = success_count + %(s)s, last_used_at = now(), updated_at = now(),
                        importance = importance + %(rate)s * (%(s)s - importance)
                        WHERE id = %(id)s RETURNING {ITEM_COLUMNS}""",
                    {"s": 1 if success else 0, "rate": _OUTCOME_RATE, "id": item_id},
                ).fetchone()
                if row is None:
                    raise KeyError(f"no memory item {item_id}")
                self._event(conn, item_id, "outcome", scope, {"success": success, "note": note})
                return item_from_row(row)

        return self.with_connection(op)

    # -- lifecycle --------------------------------------------------------------------------

    def set_status(self, ids: Sequence[int], status: Status, reason: str = "") -> list[int]:
        def op(conn: psycopg.Connection) -> list[int]:
            with conn.transaction():
                rows = conn.execute(
                    f"UPDATE {SCHEMA}.items SET status = %s, updated_at = now() "
                    "WHERE id = ANY(%s) AND status <> %s RETURNING id",
                    (status.value, list(ids), status.value),
                ).fetchall()
                for (i,) in rows:
                    self._event(conn, i, status.value, None, {"reason": reason})
                return [r[0] for r in rows]

        return self.with_connection(op)

    def delete(self, ids: Sequence[int]) -> list[int]:
        """Hard delete on explicit request; edges and events go with the items."""

        def op(conn: psycopg.Connection) -> list[int]:
            with conn.transaction():
                rows = conn.execute(
                    f"DELETE FROM {SCHEMA}.items WHERE id = ANY(%s) RETURNING id", (list(ids),)
                ).fetchall()
                self._event(conn, None, "deleted", None, {"ids": [r[0] for r in rows]})
                return [r[0] for r in rows]

        return self.with_connection(op)
