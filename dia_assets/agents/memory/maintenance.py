"""Consolidate, promote, forget: the `memory_lessons` pass over the store.

Each pass runs in one transaction under an advisory lock, so parallel runs serialise
instead of merging the same pair twice. Nothing is overwritten: merged and promoted items
keep their history as edges, events and evidence.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import psycopg
from psycopg.types.json import Jsonb

from dia_assets.agents.memory.policy import MaintenancePolicy, success_rate_ok, word_overlap
from dia_assets.platform.memory.conflicts import normalize_sql
from dia_assets.platform.memory.migrations import SCHEMA
from dia_assets.platform.memory.models import (
    Evidence,
    MaintenanceChange,
    MaintenanceReport,
    MemoryItem,
    Tier,
    utcnow,
)
from dia_assets.platform.memory.store import ITEM_COLUMNS, MemoryStore, item_from_row

_MAINTENANCE_LOCK = 0x6D61696E74  # "maint"


def _lock(conn: psycopg.Connection) -> None:
    conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MAINTENANCE_LOCK,))


def _active_lessons(
    conn: psycopg.Connection, tiers: tuple[str, ...]
) -> tuple[list[MemoryItem], np.ndarray]:
    rows = conn.execute(
        f"SELECT {ITEM_COLUMNS}, embedding FROM {SCHEMA}.items "
        "WHERE status = 'active' AND tier = ANY(%s) ORDER BY id",
        (list(tiers),),
    ).fetchall()
    items = [item_from_row(r[:-1]) for r in rows]
    vectors = np.array(
        [np.asarray(r[-1].to_numpy() if hasattr(r[-1], "to_numpy") else r[-1]) for r in rows]
    )
    return items, vectors.reshape(len(rows), -1) if rows else np.zeros((0, 1))


def _version_pairs(conn: psycopg.Connection) -> set[frozenset[int]]:
    """Conflict versions are deliberate alternatives: never merge them as duplicates."""
    rows = conn.execute(
        f"SELECT src_id, dst_id FROM {SCHEMA}.edges WHERE relation = 'version'"
    ).fetchall()
    return {frozenset(r) for r in rows}


def _rank(item: MemoryItem) -> tuple[float, ...]:
    """Survivor of a merge: most successes, then most uses, then the oldest."""
    return (item.success_count, item.use_count, item.effective_confidence(), -item.id)


def _merge(conn: psycopg.Connection, loser: MemoryItem, survivor: MemoryItem, reason: str) -> None:
    """Fold the loser's counts and evidence into the survivor and link them."""
    evidence = list(survivor.evidence)
    keys = {e.key() for e in evidence}
    for e in loser.evidence:
        if e.key() not in keys:
            evidence.append(e)
            keys.add(e.key())
    evidence.append(
        Evidence(
            text=f"merged #{loser.id}: {loser.title} ({reason})", source="merge", scope=loser.scope
        )
    )
    conn.execute(
        f"""UPDATE {SCHEMA}.items SET use_count = use_count + %(u)s,
            success_count = success_count + %(s)s, verify_pass_count = verify_pass_count + %(vp)s,
            verify_fail_count = verify_fail_count + %(vf)s, importance = greatest(importance, %(imp)s),
            evidence = %(ev)s, updated_at = now() WHERE id = %(id)s""",
        {
            "u": loser.use_count,
            "s": loser.success_count,
            "vp": loser.verify_pass_count,
            "vf": loser.verify_fail_count,
            "imp": loser.importance,
            "ev": Jsonb([e.model_dump(mode="json") for e in evidence]),
            "id": survivor.id,
        },
    )
    conn.execute(
        f"UPDATE {SCHEMA}.items SET status = 'superseded', updated_at = now() WHERE id = %s",
        (loser.id,),
    )
    conn.execute(
        f"INSERT INTO {SCHEMA}.edges (src_id, dst_id, relation, detail) VALUES (%s, %s, 'merged_into', %s) "
        "ON CONFLICT DO NOTHING",
        (loser.id, survivor.id, Jsonb({"reason": reason})),
    )
    _event(conn, loser.id, "merged", {"into": survivor.id, "reason": reason})
    # keep the in-memory survivor current for later merges in the same pass
    survivor.use_count += loser.use_count
    survivor.success_count += loser.success_count
    survivor.evidence = evidence


def _event(conn: psycopg.Connection, item_id: int, event: str, detail: dict[str, Any]) -> None:
    conn.execute(
        f"INSERT INTO {SCHEMA}.events (item_id, event, detail) VALUES (%s, %s, %s)",
        (item_id, event, Jsonb(detail)),
    )


def _near_duplicates(
    items: list[MemoryItem],
    vectors: np.ndarray,
    policy: MaintenancePolicy,
    skip: set[frozenset[int]],
    same_scope: bool,
) -> list[tuple[int, int, float]]:
    """Index pairs (i, j, similarity) that are near-duplicates under the policy."""
    groups: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for idx, item in enumerate(items):
        key = (item.tier.value, item.kind.value, normalize_sql(item.probe_sql))
        if same_scope and item.tier == Tier.SESSION:
            key += (item.scope,)
        groups[key].append(idx)
    pairs = []
    for members in groups.values():
        if len(members) < 2:
            continue
        sims = vectors[members] @ vectors[members].T
        # only pairs above the threshold reach the Python checks (numpy finds them)
        for a, b in np.argwhere(np.triu(sims >= policy.merge_similarity, k=1)):
            i, j = members[a], members[b]
            if same_scope is False and items[i].scope == items[j].scope:
                continue
            if frozenset((items[i].id, items[j].id)) in skip:
                continue
            if word_overlap(items[i].body, items[j].body) < policy.merge_word_overlap:
                continue
            pairs.append((i, j, float(sims[a, b])))
    return pairs


def consolidate(
    store: MemoryStore, policy: MaintenancePolicy | None = None
) -> list[MaintenanceChange]:
    """Merge near-duplicate lessons (same tier, kind, database and probe); keep versions."""
    policy = policy or MaintenancePolicy()

    def op(conn: psycopg.Connection) -> list[MaintenanceChange]:
        changes: list[MaintenanceChange] = []
        with conn.transaction():
            _lock(conn)
            items, vectors = _active_lessons(conn, (Tier.SESSION.value, Tier.CROSS_SESSION.value))
            gone: set[int] = set()
            for i, j, sim in _near_duplicates(
                items, vectors, policy, _version_pairs(conn), same_scope=True
            ):
                a, b = items[i], items[j]
                if a.id in gone or b.id in gone:
                    continue
                survivor, loser = (a, b) if _rank(a) >= _rank(b) else (b, a)
                _merge(conn, loser, survivor, f"near-duplicate, similarity {sim:.3f}")
                gone.add(loser.id)
                changes.append(
                    MaintenanceChange(
                        action="merged",
                        item_id=loser.id,
                        into_id=survivor.id,
                        reason=f"similarity {sim:.3f}",
                    )
                )
        return changes

    return store.with_connection(op)


def _borne_out_scopes(conn: psycopg.Connection, ids: list[int]) -> dict[int, set[str]]:
    """Databases where each item held: successful outcomes and duplicate sightings."""
    rows = conn.execute(
        f"""SELECT item_id, scope FROM {SCHEMA}.events
            WHERE item_id = ANY(%s) AND coalesce(scope, '') <> '' AND (
                (event = 'outcome' AND (detail ->> 'success')::boolean) OR event = 'duplicate')""",
        (ids,),
    ).fetchall()
    out: dict[int, set[str]] = defaultdict(set)
    for item_id, scope in rows:
        out[item_id].add(scope)
    return out


def promote(store: MemoryStore, policy: MaintenancePolicy | None = None) -> list[MaintenanceChange]:
    """Session -> cross-session when borne out on a second database or after N successes."""
    policy = policy or MaintenancePolicy()

    def op(conn: psycopg.Connection) -> list[MaintenanceChange]:
        changes: list[MaintenanceChange] = []
        with conn.transaction():
            _lock(conn)
            items, vectors = _active_lessons(conn, (Tier.SESSION.value,))
            scopes = _borne_out_scopes(conn, [i.id for i in items])
            for item in items:
                scopes[item.id].add(item.scope)
            # the same lesson learned independently on other databases also bears it out
            twins: dict[int, list[int]] = defaultdict(list)
            for i, j, _ in _near_duplicates(
                items, vectors, policy, _version_pairs(conn), same_scope=False
            ):
                twins[i].append(j)
                twins[j].append(i)
            done: set[int] = set()
            for idx, item in enumerate(items):
                if item.id in done:
                    continue
                group = [idx, *[j for j in twins[idx] if items[j].id not in done]]
                all_scopes = set().union(*(scopes[items[j].id] for j in group)) - {""}
                uses = sum(items[j].use_count for j in group)
                wins = sum(items[j].success_count for j in group)
                if not success_rate_ok(uses, wins, policy.promote_min_success_rate):
                    continue
                if len(all_scopes) >= policy.promote_min_scopes:
                    reason = (
                        f"borne out on {len(all_scopes)} databases: {', '.join(sorted(all_scopes))}"
                    )
                elif item.success_count >= policy.promote_min_successes:
                    reason = f"{item.success_count} successful uses of {item.use_count}"
                else:
                    continue
                best = max((items[j] for j in group), key=_rank)
                for j in group:
                    if items[j].id != best.id:
                        _merge(conn, items[j], best, "same lesson on another database")
                        done.add(items[j].id)
                        changes.append(
                            MaintenanceChange(
                                action="merged",
                                item_id=items[j].id,
                                into_id=best.id,
                                reason="promotion twin",
                            )
                        )
                _promote_row(conn, best, reason, sorted(all_scopes))
                done.add(best.id)
                changes.append(MaintenanceChange(action="promoted", item_id=best.id, reason=reason))
        return changes

    return store.with_connection(op)


def _promote_row(
    conn: psycopg.Connection, item: MemoryItem, reason: str, scopes: list[str]
) -> None:
    evidence = [
        *item.evidence,
        Evidence(text=f"promoted to cross_session: {reason}", source="promotion", scope=item.scope),
    ]
    clash = conn.execute(
        f"SELECT id FROM {SCHEMA}.items WHERE tier = 'cross_session' AND kind = %s AND scope = %s "
        "AND content_hash = %s AND status = 'active'",
        (item.kind.value, item.scope, item.content_hash),
    ).fetchone()
    if clash is not None:  # already promoted once (e.g. an earlier twin): fold into it
        row = conn.execute(
            f"SELECT {ITEM_COLUMNS} FROM {SCHEMA}.items WHERE id = %s", clash
        ).fetchone()
        _merge(conn, item, item_from_row(row), "already cross-session")  # type: ignore[arg-type]
        return
    conn.execute(
        f"UPDATE {SCHEMA}.items SET tier = 'cross_session', evidence = %s, updated_at = now() WHERE id = %s",
        (Jsonb([e.model_dump(mode="json") for e in evidence]), item.id),
    )
    _event(conn, item.id, "promoted", {"reason": reason, "scopes": scopes})


def forget(
    store: MemoryStore, policy: MaintenancePolicy | None = None, now: datetime | None = None
) -> list[MaintenanceChange]:
    """Archive low-value, long-idle or repeatedly refuted lessons (value/time/evidence-driven)."""
    policy = policy or MaintenancePolicy()
    now = now or utcnow()
    idle_before = now - timedelta(days=policy.forget_idle_days)

    def op(conn: psycopg.Connection) -> list[MaintenanceChange]:
        with conn.transaction():
            _lock(conn)
            rows = conn.execute(
                f"""SELECT id,
                    CASE
                      WHEN tier = 'session' AND verify_fail_count >= %(fails)s
                           AND verify_pass_count = 0 THEN 'probe keeps failing'
                      WHEN importance < %(low)s AND success_count = 0 THEN 'low value'
                      WHEN coalesce(last_used_at, created_at) < %(idle)s AND importance < %(keep)s
                           AND success_count < %(succ)s THEN 'idle'
                    END AS reason
                FROM {SCHEMA}.items WHERE status = 'active' AND tier = ANY(%(tiers)s)""",
                {
                    "low": policy.forget_below_importance,
                    "idle": idle_before,
                    "keep": policy.keep_importance,
                    "succ": policy.promote_min_successes,
                    "fails": policy.forget_failed_probes,
                    "tiers": [t.value for t in policy.forget_tiers],
                },
            ).fetchall()
            changes = []
            for item_id, reason in rows:
                if reason is None:
                    continue
                conn.execute(
                    f"UPDATE {SCHEMA}.items SET status = 'archived', updated_at = now() WHERE id = %s",
                    (item_id,),
                )
                _event(conn, item_id, "archived", {"reason": reason})
                changes.append(MaintenanceChange(action="archived", item_id=item_id, reason=reason))
            return changes

    return store.with_connection(op)


def run_maintenance(
    store: MemoryStore, policy: MaintenancePolicy | None = None, now: datetime | None = None
) -> MaintenanceReport:
    """The `memory_lessons` pass: consolidate, then promote, then forget."""
    changes = [*consolidate(store, policy), *promote(store, policy), *forget(store, policy, now)]
    return MaintenanceReport(changes=changes, counts=store.counts())
