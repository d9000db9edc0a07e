"""Bulk loading of examples: skip stored content, embed while COPY streams, index after.

Inserting into an HNSW index costs about 2-5 ms a row; building it over a loaded table
costs about 0.5 ms a row (NOTES.md). So big loads drop the search indexes, load, and
build them again, with a large `maintenance_work_mem` and parallel workers.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Protocol, TypeVar

import psycopg

from dia_assets.platform.embeddings import Embedder
from dia_assets.platform.memory import migrations
from dia_assets.platform.memory.conflicts import content_hash
from dia_assets.platform.memory.events import write_event
from dia_assets.platform.memory.migrations import BULK_LOCK, SCHEMA
from dia_assets.platform.memory.models import ImportReport, NewMemory

T = TypeVar("T")


class BulkTarget(Protocol):
    """What a bulk load needs of the store (MemoryStore): its embedder and a retried connection."""

    embedder: Embedder

    def with_connection(self, op: Callable[[psycopg.Connection], T]) -> T: ...


COPY_COLUMNS = (
    "tier, kind, title, body, probe_sql, question, evidence, notes, scope, "
    "content_hash, embedding, importance, confidence"
)
COPY_TYPES = ["text"] * 6 + ["jsonb", "jsonb", "text", "text", "vector", "float4", "float4"]


def is_big(new_rows: int, existing_rows: int, threshold: int | None) -> bool:
    """Rebuild rather than maintain the indexes: at least 1,000 new rows making at least a
    fifth of the table, or at least `threshold` rows when one is given."""
    if threshold is not None:
        return new_rows >= threshold
    return new_rows >= 1000 and 5 * new_rows >= existing_rows + new_rows


def import_examples(
    store: BulkTarget, items: Sequence[NewMemory], reindex_threshold: int | None = None
) -> ImportReport:
    """Load examples once each (by kind, scope and content hash); figures in `seconds`.

    Writers wait while the indexes build; readers fall back to exact search meanwhile.
    """
    seconds: dict[str, float] = {"embed": 0.0}
    start = time.perf_counter()
    hashes = [content_hash(i) for i in items]

    def op(conn: psycopg.Connection) -> ImportReport:
        conn.execute("SELECT pg_advisory_lock(%s)", (BULK_LOCK,))
        try:
            stored = conn.execute(
                f"SELECT kind, scope, content_hash FROM {SCHEMA}.items "
                "WHERE tier = 'example' AND status = 'active'"
            ).fetchall()
            seen = set(stored)
            todo = []
            for idx, (item, chash) in enumerate(zip(items, hashes, strict=True)):
                key = (item.kind.value, item.scope, chash)
                if key not in seen:
                    seen.add(key)
                    todo.append(idx)
            t = time.perf_counter()
            if is_big(len(todo), len(stored), reindex_threshold):
                migrations.drop_search_indexes(conn)
            try:
                batch = [items[i] for i in todo]
                inserted = copy_examples(
                    conn, store.embedder, batch, [hashes[i] for i in todo], seconds
                )
            finally:
                seconds["load"] = time.perf_counter() - t
                t = time.perf_counter()
                rebuilt = migrations.build_search_indexes(conn)
                conn.execute(f"ANALYZE {SCHEMA}.items")  # fresh statistics: plans use HNSW
                seconds["index"] = time.perf_counter() - t
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (BULK_LOCK,))
        seconds["total"] = time.perf_counter() - start
        return ImportReport(
            read=len(items),
            inserted=inserted,
            duplicates=len(items) - inserted,
            reindexed=bool(rebuilt),
            seconds={k: round(v, 3) for k, v in seconds.items()},
        )

    return store.with_connection(op)


def _rows(
    embedder: Embedder,
    items: Sequence[NewMemory],
    hashes: list[str],
    seconds: dict[str, float],
    batch: int = 4096,
) -> Iterator[tuple[Any, ...]]:
    """COPY rows, embedding one batch at a time while the server ingests the previous one."""
    for lo in range(0, len(items), batch):
        chunk = items[lo : lo + batch]
        t = time.perf_counter()
        vectors = embedder.embed([i.embedding_text() for i in chunk])
        seconds["embed"] += time.perf_counter() - t
        for item, chash, vec in zip(chunk, hashes[lo : lo + batch], vectors, strict=True):
            yield (
                item.tier.value,
                item.kind.value,
                item.title,
                item.body,
                item.probe_sql,
                item.question,
                [e.model_dump(mode="json") for e in item.evidence],
                item.notes,
                item.scope,
                chash,
                vec,
                item.importance,
                item.confidence,
            )


def copy_examples(
    conn: psycopg.Connection,
    embedder: Embedder,
    items: Sequence[NewMemory],
    hashes: list[str],
    seconds: dict[str, float],
) -> int:
    """COPY straight into the table; if a concurrent writer stored one of the rows since
    the duplicate check, redo the batch through a stage table with ON CONFLICT DO NOTHING."""
    if not items:
        return 0
    try:
        with conn.transaction():
            with (
                conn.cursor() as cur,
                cur.copy(
                    f"COPY {SCHEMA}.items ({COPY_COLUMNS}) FROM STDIN (FORMAT BINARY)"
                ) as copy,
            ):
                copy.set_types(COPY_TYPES)
                for row in _rows(embedder, items, hashes, seconds):
                    copy.write_row(row)
            write_event(conn, None, "import", None, {"read": len(items), "inserted": len(items)})
        return len(items)
    except psycopg.errors.UniqueViolation:
        pass
    with conn.transaction():
        conn.execute(
            f"CREATE TEMP TABLE memory_stage ON COMMIT DROP AS "
            f"SELECT {COPY_COLUMNS} FROM {SCHEMA}.items LIMIT 0"
        )
        with (
            conn.cursor() as cur,
            cur.copy(f"COPY memory_stage ({COPY_COLUMNS}) FROM STDIN (FORMAT BINARY)") as copy,
        ):
            copy.set_types(COPY_TYPES)
            for row in _rows(embedder, items, hashes, seconds):
                copy.write_row(row)
        inserted = conn.execute(
            f"""WITH ins AS (
                    INSERT INTO {SCHEMA}.items ({COPY_COLUMNS}) SELECT {COPY_COLUMNS} FROM memory_stage
                    ON CONFLICT (tier, kind, scope, content_hash) WHERE status = 'active'
                    DO NOTHING RETURNING 1)
                SELECT count(*) FROM ins"""
        ).fetchone()[0]  # type: ignore[index]
        write_event(conn, None, "import", None, {"read": len(items), "inserted": int(inserted)})
    return int(inserted)
