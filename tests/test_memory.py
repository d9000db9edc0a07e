"""Shared memory against a real embedded PostgreSQL + pgvector: every store operation."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import duckdb
import numpy as np
import psycopg
import pytest

from dia_assets.agents.memory import MaintenancePolicy
from dia_assets.agents.memory.examples import infer_kind, read_examples
from dia_assets.agents.memory.export import export_lessons
from dia_assets.agents.memory.maintenance import consolidate, forget, promote, run_maintenance
from dia_assets.platform.memory import (
    ConflictPolicy,
    EmbeddingMismatch,
    GatedProbeRunner,
    JudgeVerdict,
    Kind,
    MemoryFilter,
    MemoryStore,
    MemoryStoreUnavailable,
    NewMemory,
    RetrievalWeights,
    Status,
    Tier,
    database_fingerprint,
    duckdb_probe_runner,
    probe_confirms,
)
from dia_assets.platform.memory.bulk import copy_examples, is_big
from dia_assets.platform.memory.conflicts import content_hash, normalize_sql
from dia_assets.platform.memory.connection import redact
from dia_assets.platform.memory.migrations import SCHEMA, migrate, missing_search_indexes
from dia_assets.platform.memory.models import utcnow
from dia_assets.platform.memory.retrieval import fuse
from tests import memory_fixtures
from tests.memory_fixtures import HashEmbedder, make_duckdb, make_other_duckdb

# pytest fixtures, shared through the module namespace
db_url = memory_fixtures.db_url
hash_store = memory_fixtures.hash_store
pg_server = memory_fixtures.pg_server
store = memory_fixtures.store

FANOUT_PROBE = "SELECT count(*) > count(DISTINCT cds_code) FROM scores WHERE cds_code = 'A'"


def lesson(
    body: str = "Count schools through the scores join with COUNT(DISTINCT cds_code), not COUNT(*).",
    probe: str = FANOUT_PROBE,
    scope: str = "db-a",
    **kw: object,
) -> NewMemory:
    fields = {
        "kind": Kind.AGGREGATION,
        "title": "Count entities through a fan-out join with COUNT(DISTINCT pk)",
        "body": body,
        "probe_sql": probe,
        "scope": scope,
        "evidence": ["COUNT(*) returned 5 for school A, COUNT(DISTINCT cds_code) returned 1"],
        **kw,
    }
    return NewMemory.model_validate(fields)


# -- models --------------------------------------------------------------------------------


def test_lessons_need_a_probe_and_evidence_strings_are_observations() -> None:
    with pytest.raises(ValueError, match="probe_sql"):
        NewMemory(kind=Kind.JOIN, title="t", body="b")
    item = NewMemory(
        kind=Kind.JOIN, title="t", body="b", probe_sql="SELECT 1", evidence="seen once"
    )
    assert item.evidence[0].text == "seen once" and item.evidence[0].source == "observation"
    assert (
        NewMemory(tier=Tier.EXAMPLE, kind=Kind.FILTER, title="q", body="SELECT 1").probe_sql is None
    )


def test_probe_convention() -> None:
    assert probe_confirms([(True,)]) and probe_confirms([(3, "x")])
    assert (
        not probe_confirms([]) and not probe_confirms([(False,)]) and not probe_confirms([(None,)])
    )
    assert not probe_confirms([(0,)])


# -- insert, duplicates, conflicts -------------------------------------------------------------


def test_insert_then_pull_body_by_id(store: MemoryStore) -> None:
    result = store.insert(lesson(question="How many schools have scores?"))
    assert result.action == "inserted" and result.status == Status.ACTIVE and not result.conflicts
    item = store.get(result.id)
    assert item.body.startswith("Count schools") and item.probe_sql == FANOUT_PROBE
    assert item.question == "How many schools have scores?" and item.scope == "db-a"
    assert item.evidence[0].scope == "db-a"  # evidence is stamped with the database it came from
    assert store.counts() == {"session": {"aggregation": 1}}


def test_duplicate_is_stored_once_and_merges_evidence(store: MemoryStore) -> None:
    first = store.insert(lesson())
    # same rule, same probe modulo case and spacing: a duplicate, its evidence is kept
    again = store.insert(
        lesson(probe=FANOUT_PROBE.upper().replace(" ", "  ") + ";", evidence=["seen again on Q7"])
    )
    assert again.action == "duplicate" and again.id == first.id
    assert [e.text for e in store.get(first.id).evidence][-1] == "seen again on Q7"
    assert store.status_counts() == {"active": 1}


def test_conflict_recency_keeps_both_as_linked_versions(store: MemoryStore) -> None:
    old = store.insert(lesson())
    new = store.insert(
        lesson(body="Count schools through the scores join with COUNT(*), rows are schools.")
    )
    assert [(c.other_id, c.resolution, c.rule) for c in new.conflicts] == [
        (old.id, "new_wins", "recency")
    ]
    assert (
        store.get(old.id).status == Status.SUPERSEDED and store.get(new.id).status == Status.ACTIVE
    )
    items, edges = store.history(new.id)
    assert [i.id for i in items] == [old.id, new.id]
    assert [(e.src_id, e.dst_id, e.relation) for e in edges] == [(old.id, new.id, "version")]
    # a different precondition is not a conflict, even for a similar rule
    other = store.insert(
        lesson(body="Use COUNT(*) here.", probe="SELECT count(*) > 0 FROM schools")
    )
    assert other.conflicts == []


def test_conflict_confidence_rule_and_ties(store: MemoryStore) -> None:
    policy = ConflictPolicy(strategy="confidence")
    strong = store.insert(lesson(confidence=0.9), policy=policy)
    weak = store.insert(
        lesson(body="Use COUNT(*) through the join.", confidence=0.3), policy=policy
    )
    assert weak.status == Status.SUPERSEDED and weak.conflicts[0].resolution == "old_wins"
    assert store.get(strong.id).status == Status.ACTIVE
    tie = store.insert(
        lesson(body="Use COUNT(1) through the join.", confidence=0.85), policy=policy
    )
    assert tie.conflicts[0].resolution == "keep_both" and tie.status == Status.ACTIVE
    assert store.get(strong.id).status == Status.ACTIVE


def test_conflict_judge_confirms_or_dismisses(store: MemoryStore) -> None:
    calls: list[tuple[str, int]] = []

    def dismiss(new: NewMemory, old: object) -> JudgeVerdict:
        calls.append((new.body, old.id))  # type: ignore[attr-defined]
        return JudgeVerdict.NO_CONFLICT

    first = store.insert(lesson())
    second = store.insert(lesson(body="Also check NULL cds_code rows first."), judge=dismiss)
    assert calls == [("Also check NULL cds_code rows first.", first.id)]
    assert second.conflicts == [] and store.get(first.id).status == Status.ACTIVE

    def prefer_old(new: NewMemory, old: object) -> JudgeVerdict:
        return JudgeVerdict.OLD_WINS

    third = store.insert(
        lesson(body="Use COUNT(*) through the join."),
        judge=prefer_old,
        policy=ConflictPolicy(strategy="confirmation"),
    )
    assert {c.resolution for c in third.conflicts} == {
        "old_wins"
    } and third.status == Status.SUPERSEDED
    # confirmation without a judge keeps both: the probe decides at use time
    fourth = store.insert(
        lesson(body="Use COUNT(pk) through the join."),
        policy=ConflictPolicy(strategy="confirmation"),
    )
    assert fourth.status == Status.ACTIVE and all(
        c.resolution == "keep_both" for c in fourth.conflicts
    )


# -- retrieval ------------------------------------------------------------------------------------


def _seed_examples(store: MemoryStore) -> None:
    rows = [
        (
            "How many schools are in Alameda county?",
            "SELECT count(*) FROM schools WHERE county = 'Alameda'",
        ),
        ("List patients born in 1982", "SELECT id FROM patients WHERE year(born) = 1982"),
        (
            "Average score per county",
            "SELECT county, avg(score) FROM schools JOIN scores USING (cds_code) GROUP BY 1",
        ),
        (
            "Which movie has the highest rating?",
            "SELECT title FROM movies ORDER BY rating DESC LIMIT 1",
        ),
    ]
    items = [
        NewMemory(
            tier=Tier.EXAMPLE, kind=infer_kind(sql), title=q, question=q, body=sql, scope="db-train"
        )
        for q, sql in rows
    ]
    report = store.import_examples(items)
    assert report.inserted == 4


def test_retrieve_hybrid_returns_references_ranked_and_filtered(store: MemoryStore) -> None:
    _seed_examples(store)
    here = store.insert(lesson(scope="db-a")).id
    elsewhere = store.insert(
        lesson(scope="db-other", body="Schools: COUNT(DISTINCT cds_code) on db-other.")
    ).id
    refs = store.retrieve("how many schools are there in each county", k=3)
    assert refs[0].title == "How many schools are in Alameda county?"
    assert all(r.score >= s.score for r, s in zip(refs, refs[1:], strict=False))
    assert {"id", "title", "score"} <= set(refs[0].model_dump())
    # pull-based: a reference carries no body
    assert "body" not in refs[0].model_dump()
    # scope: session lessons of another database are not served; examples stay global
    scoped = store.retrieve(
        "count schools through a join", k=10, filters=MemoryFilter(scope="db-a")
    )
    ids = [r.id for r in scoped]
    assert here in ids and elsewhere not in ids and any(r.tier == Tier.EXAMPLE for r in scoped)
    # metadata filters
    only = store.retrieve(
        "schools", k=10, filters=MemoryFilter(tiers=[Tier.EXAMPLE], kinds=[Kind.JOIN])
    )
    assert [r.title for r in only] == ["Average score per county"]
    assert store.retrieve("schools", filters=MemoryFilter(max_age_days=1))
    # exact words help: the text signal is non-zero only where the terms occur
    movie = store.retrieve("highest rating movie", k=1)[0]
    assert movie.title.startswith("Which movie") and movie.text_score > 0


def test_retrieve_skips_superseded_and_archived(store: MemoryStore) -> None:
    old = store.insert(lesson()).id
    new = store.insert(lesson(body="Count schools with COUNT(*) through the join.")).id
    ids = [
        r.id for r in store.retrieve("count schools", filters=MemoryFilter(tiers=[Tier.SESSION]))
    ]
    assert ids == [new]
    store.set_status([new], Status.ARCHIVED)
    assert store.retrieve("count schools", filters=MemoryFilter(tiers=[Tier.SESSION])) == []
    everything = MemoryFilter(tiers=[Tier.SESSION], statuses=list(Status))
    assert {r.id for r in store.retrieve("count schools", filters=everything)} == {old, new}


def test_selective_filter_falls_back_to_exact_search(hash_store: MemoryStore) -> None:
    """HNSW filters after the scan; a rare tier must still be found."""
    examples = [
        NewMemory(
            tier=Tier.EXAMPLE,
            kind=Kind.FILTER,
            title=f"q{i}",
            question=f"count schools number {i}",
            body=f"SELECT {i}",
        )
        for i in range(300)
    ]
    hash_store.import_examples(examples)
    target = hash_store.insert(lesson(title="count schools", body="count schools distinct")).id
    refs = hash_store.retrieve("count schools", k=3, filters=MemoryFilter(tiers=[Tier.SESSION]))
    assert [r.id for r in refs] == [target]


def test_fusion_weights_are_applied() -> None:
    rows = [
        (1, "similar", "session", "join", "s", 0.9, 0.0, 0.0, 0.1, 2),
        (2, "important", "session", "join", "s", 0.5, 0.0, 0.0, 1.0, 2),
    ]
    assert [r.id for r in fuse(rows, RetrievalWeights(), 2)] == [1, 2]
    heavy = RetrievalWeights(similarity=0.1, text=0.0, recency=0.0, importance=0.9)
    assert [r.id for r in fuse(rows, heavy, 2)] == [2, 1]
    old = fuse([(3, "old", "session", "join", "s", 0.5, 0.0, 30.0, 0.5, 1)], RetrievalWeights(), 1)[
        0
    ]
    assert old.recency == pytest.approx(0.5)


# -- verification -----------------------------------------------------------------------------


def test_probe_refuses_a_stale_lesson_after_the_data_changes(
    store: MemoryStore, tmp_path: Path
) -> None:
    db = make_duckdb(tmp_path / "w.duckdb", fanout=True)
    scope = database_fingerprint(db)
    item = store.insert(lesson(scope=scope)).id
    with duckdb_probe_runner(db) as probe:
        served = store.retrieve_verified(
            "count schools through the scores join", probe, scope=scope
        )
    assert [ref.id for ref, _ in served] == [item]
    assert served[0][1].outcome == "confirmed"

    # the data changes: school A no longer fans out, so the precondition no longer holds
    con = duckdb.connect(str(db))
    con.execute("DELETE FROM scores WHERE cds_code = 'A' AND year > 2000")
    con.close()
    assert database_fingerprint(db) == scope  # same schema, same scope
    with duckdb_probe_runner(db) as probe:
        assert (
            store.retrieve_verified("count schools through the scores join", probe, scope=scope)
            == []
        )
        [result] = store.verify([item], probe, scope)
    assert result.outcome == "refuted" and not result.usable
    stored = store.get(item)
    assert (stored.verify_pass_count, stored.verify_fail_count) == (1, 2)
    assert [e["event"] for e in store.events(item)][-3:] == [
        "probe_confirmed",
        "probe_refuted",
        "probe_refuted",
    ]


def test_probe_runner_is_read_only_and_sandboxed(store: MemoryStore, tmp_path: Path) -> None:
    db = make_duckdb(tmp_path / "w.duckdb")
    (tmp_path / "secret.csv").write_text("a\n1\n")
    writer = store.insert(lesson(probe="DELETE FROM scores RETURNING true")).id
    reader = store.insert(
        lesson(
            body="Other rule",
            probe=f"SELECT count(*) > 0 FROM read_csv('{tmp_path / 'secret.csv'}')",
        )
    ).id
    with duckdb_probe_runner(db) as probe:
        results = store.verify([writer, reader], probe, "db-a")
        assert probe("SELECT count(*) FROM scores")[0][0] == 6
    assert [r.outcome for r in results] == ["error", "error"]
    assert "read-only" in results[0].detail.lower() or "read only" in results[0].detail.lower()
    assert not any(r.usable for r in results)


def test_probe_runner_interrupts_a_slow_probe(tmp_path: Path) -> None:
    db = make_duckdb(tmp_path / "w.duckdb")
    from dia_assets.agents.query.dialects import QueryTimeout

    with GatedProbeRunner.open(db, timeout_s=0.2) as probe, pytest.raises(QueryTimeout):
        probe("SELECT count(*) FROM range(100000000000) a")


def test_postgres_probe_runner_is_read_only(db_url: str) -> None:
    probe = GatedProbeRunner.open(db_url)  # any target, through connect()
    try:
        assert probe("SELECT true") == [(True,)]
        from dia_assets.platform.sql.safety import SQLRefused

        with pytest.raises(SQLRefused):  # the gate
            probe("CREATE TABLE sneaky (a int)")
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):  # and the connection under it
            probe.db.query("CREATE TABLE sneaky (a int)")
        with psycopg.connect(db_url) as conn:
            assert database_fingerprint(conn).startswith("db-")
    finally:
        probe.close()


def test_probe_runner_accepts_objects_with_probe_method(store: MemoryStore) -> None:
    class Warehouse:
        def probe(self, sql: str) -> list[tuple[bool]]:
            return [(True,)]

    item = store.insert(lesson()).id
    assert store.verify([item], Warehouse(), "db-a")[0].usable


def test_examples_are_usable_without_a_probe(store: MemoryStore) -> None:
    _seed_examples(store)
    ref = store.retrieve("schools in Alameda", k=1)[0]
    [result] = store.verify([ref.id], lambda sql: [], "db-x")
    assert result.outcome == "no_probe" and result.usable


def test_database_fingerprint(tmp_path: Path) -> None:
    a = make_duckdb(tmp_path / "a.duckdb")
    b = make_duckdb(tmp_path / "b.duckdb", fanout=False)
    c = make_other_duckdb(tmp_path / "c.duckdb")
    assert database_fingerprint(a) == database_fingerprint(b)  # schema, not data, not file name
    assert database_fingerprint(a) != database_fingerprint(c)
    assert database_fingerprint(a).startswith("db-")
    con = duckdb.connect(str(a))
    con.execute("ALTER TABLE scores ADD COLUMN grade VARCHAR")
    con.close()
    assert database_fingerprint(a) != database_fingerprint(b)


# -- outcomes, promotion, consolidation, forgetting ------------------------------------------


def test_record_outcome_counts_and_moves_importance(store: MemoryStore) -> None:
    item = store.insert(lesson()).id
    up = store.record_outcome(item, success=True, scope="db-a")
    assert (up.use_count, up.success_count) == (1, 1) and up.importance == pytest.approx(0.55)
    down = store.record_outcome(item, success=False, scope="db-a", note="wrong shape")
    assert (down.use_count, down.success_count) == (2, 1) and down.importance < up.importance
    assert down.last_used_at is not None
    with pytest.raises(KeyError):
        store.record_outcome(99999, success=True)


def test_promotion_across_two_databases(store: MemoryStore, tmp_path: Path) -> None:
    db_a = make_duckdb(tmp_path / "a.duckdb")
    db_b = make_other_duckdb(tmp_path / "b.duckdb")
    scope_a, scope_b = database_fingerprint(db_a), database_fingerprint(db_b)
    probe = "SELECT count(*) > count(DISTINCT cds_code) FROM scores"
    item = store.insert(lesson(scope=scope_a, probe=probe)).id
    store.record_outcome(item, success=True, scope=scope_a)
    assert promote(store) == []  # one database is not enough
    assert store.get(item).tier == Tier.SESSION

    # on the second database, the probe holds and the lesson helps an answer
    with duckdb_probe_runner(db_b) as run:
        assert store.verify([item], run, scope_b)[0].usable
    store.record_outcome(item, success=True, scope=scope_b)
    changes = promote(store)
    assert [(c.action, c.item_id) for c in changes] == [("promoted", item)]
    promoted = store.get(item)
    assert promoted.tier == Tier.CROSS_SESSION
    assert promoted.evidence[-1].source == "promotion" and scope_b in promoted.evidence[-1].text
    # cross-session lessons are served on any database (still behind their probe)
    refs = store.retrieve(
        "count schools through the join", filters=MemoryFilter(scope="db-elsewhere")
    )
    assert item in [r.id for r in refs]


def test_promotion_of_the_same_lesson_learned_on_two_databases(store: MemoryStore) -> None:
    a = store.insert(lesson(scope="db-a")).id
    b = store.insert(lesson(scope="db-b", evidence=["on db-b: COUNT(*) 35, DISTINCT 1"])).id
    changes = promote(store)
    assert {c.action for c in changes} == {"promoted", "merged"}
    kept = store.get(a)
    assert kept.tier == Tier.CROSS_SESSION and store.get(b).status == Status.SUPERSEDED
    assert any("on db-b" in e.text for e in kept.evidence)
    # a later identical lesson on a third database is a duplicate of the cross-session one
    assert store.insert(lesson(scope="db-c")).action == "duplicate"


def test_promotion_after_n_successful_uses(store: MemoryStore) -> None:
    item = store.insert(lesson()).id
    for _ in range(4):
        store.record_outcome(item, success=True, scope="db-a")
    assert promote(store, MaintenancePolicy(promote_min_successes=5)) == []
    store.record_outcome(item, success=True, scope="db-a")
    [change] = promote(store, MaintenancePolicy(promote_min_successes=5))
    assert change.reason.startswith("5 successful uses")
    failing = store.insert(
        lesson(body="Another rule entirely about averages.", probe="SELECT true")
    ).id
    for ok in (True, False, False, False, False, True, True):
        store.record_outcome(failing, success=ok, scope="db-a")
    assert promote(store, MaintenancePolicy(promote_min_successes=3)) == []  # 3/7 is not borne out


def test_consolidate_merges_near_duplicates_and_keeps_versions(store: MemoryStore) -> None:
    a = store.insert(
        lesson(
            body="Count schools through the scores join with COUNT(DISTINCT cds_code) not COUNT(*)"
        )
    ).id
    b = store.insert(
        lesson(
            body="count schools through the scores join with COUNT(DISTINCT cds_code), not COUNT(*) !"
        )
    ).id
    store.record_outcome(b, success=True, scope="db-a")
    unrelated = store.insert(
        lesson(
            body="Dates are stored as text YYYYMMDD; cast before comparing.",
            probe="SELECT 1",
            kind=Kind.FILTER,
        )
    ).id
    [change] = consolidate(store)
    assert (change.action, change.item_id, change.into_id) == (
        "merged",
        a,
        b,
    )  # the proven one survives
    assert store.get(a).status == Status.SUPERSEDED and store.get(unrelated).status == Status.ACTIVE
    survivor = store.get(b)
    assert survivor.use_count == 1 and survivor.evidence[-1].source == "merge"
    _, edges = store.history(b)
    assert [(e.src_id, e.dst_id, e.relation) for e in edges] == [(a, b, "merged_into")]
    assert consolidate(store) == []  # idempotent


def test_conflicting_versions_are_not_merged(store: MemoryStore) -> None:
    store.insert(lesson(body="Use COUNT(DISTINCT cds_code) through the scores join."))
    store.insert(
        lesson(body="Use COUNT(cds_code) through the scores join."),
        policy=ConflictPolicy(strategy="confirmation"),
    )
    assert consolidate(store, MaintenancePolicy(merge_similarity=0.5, merge_word_overlap=0.1)) == []


def test_forget_archives_low_value_idle_and_refuted_lessons(hash_store: MemoryStore) -> None:
    low = hash_store.insert(lesson(body="low value rule", importance=0.1)).id
    idle = hash_store.insert(lesson(body="idle rule", probe="SELECT 2")).id
    keep = hash_store.insert(lesson(body="important rule", probe="SELECT 3", importance=0.9)).id
    refuted = hash_store.insert(lesson(body="refuted rule", probe="SELECT false")).id
    example = hash_store.import_examples(
        [NewMemory(tier=Tier.EXAMPLE, kind=Kind.FILTER, title="q", question="q", body="SELECT 1")]
    )
    for _ in range(3):
        hash_store.verify([refuted], lambda sql: [(False,)], "db-a")
    later = utcnow() + timedelta(days=365)
    changes = {c.item_id: c.reason for c in forget(hash_store, now=later)}
    assert changes == {low: "low value", idle: "idle", refuted: "probe keeps failing"}
    assert hash_store.get(keep).status == Status.ACTIVE and example.inserted == 1
    assert hash_store.counts() == {"example": {"filter": 1}, "session": {"aggregation": 1}}
    # explicit deletion is the only hard delete
    assert hash_store.delete([low]) == [low]
    with pytest.raises(KeyError):
        hash_store.get(low)


def test_run_maintenance_reports_changes_and_counts(hash_store: MemoryStore) -> None:
    hash_store.insert(lesson(scope="db-a"))
    hash_store.insert(lesson(scope="db-b"))
    hash_store.insert(lesson(body="low value rule", probe="SELECT 9", importance=0.05))
    report = run_maintenance(hash_store)
    assert (report.count("merged"), report.count("promoted"), report.count("archived")) == (1, 1, 1)
    assert report.counts == {"cross_session": {"aggregation": 1}}


# -- export, examples import --------------------------------------------------------------------


def test_export_lessons_markdown(store: MemoryStore, tmp_path: Path) -> None:
    old = store.insert(lesson()).id
    new = store.insert(lesson(body="Use COUNT(*) through the join.")).id
    _seed_examples(store)
    text = export_lessons(store, tmp_path / "memory" / "lessons.md").read_text()
    assert text.startswith("# DIA memory: lessons for review")
    assert f"### #{new} [aggregation]" in text and FANOUT_PROBE in text
    assert f"version from #{old} (recency)" in text and "4 examples" in text
    assert f"- #{old} [session/aggregation] superseded" in text


def test_import_examples_jsonl_bulk_dedupes_and_rebuilds_indexes(
    hash_store: MemoryStore, tmp_path: Path
) -> None:
    path = tmp_path / "ex.jsonl"
    rows = [
        {
            "question": f"How many orders in month {i}?",
            "SQL": f"SELECT count(*) FROM orders WHERE month = {i}",
            "db_id": "shop",
        }
        for i in range(50)
    ]
    rows.append(
        {
            "question": "Customers with orders",
            "sql": "SELECT c.id FROM customers c JOIN orders o ON o.cid = c.id",
            "notes": {"orders.cid": "customer id"},
        }
    )
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    items = list(read_examples(path, default_scope="db-x"))
    assert items[0].scope == "shop" and items[-1].scope == "db-x" and items[-1].kind == Kind.JOIN
    assert items[0].kind == Kind.AGGREGATION and items[-1].notes == {"orders.cid": "customer id"}
    first = hash_store.import_examples(items, reindex_threshold=10)
    assert (first.inserted, first.duplicates, first.reindexed) == (51, 0, True)
    assert missing_search_indexes(hash_store.connection()) == []
    second = hash_store.import_examples(items[:10], reindex_threshold=10)
    assert (second.inserted, second.duplicates) == (0, 10)
    assert hash_store.counts()["example"] == {"aggregation": 50, "join": 1}
    # a concurrent writer stored one row between the duplicate check and COPY: the batch
    # is redone through a stage table with ON CONFLICT DO NOTHING, nothing is lost
    fresh = NewMemory(
        tier=Tier.EXAMPLE,
        kind=Kind.FILTER,
        title="new",
        question="A new question?",
        body="SELECT 2",
    )
    seconds = {"embed": 0.0}
    batch = [items[0], fresh]
    hashes = [content_hash(i) for i in batch]
    assert copy_examples(hash_store.connection(), hash_store.embedder, batch, hashes, seconds) == 1
    assert hash_store.counts()["example"] == {"aggregation": 50, "filter": 1, "join": 1}
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q", "sql": "SELECT 1"}\n{"question": "no sql"}\n')
    with pytest.raises(ValueError, match="bad.jsonl:2"):
        list(read_examples(bad))


def test_bulk_loads_rebuild_indexes_only_when_big() -> None:
    assert not is_big(999, 0, None) and is_big(1000, 0, None)
    assert is_big(25_000, 100_000, None) and not is_big(10_000, 100_000, None)
    assert is_big(10, 10**6, 10)


def test_kind_inference() -> None:
    assert infer_kind("select * from a join b on a.x = b.x") == Kind.JOIN
    assert infer_kind("SELECT county, COUNT(*) FROM s GROUP BY county") == Kind.AGGREGATION
    assert infer_kind("SELECT name FROM s ORDER BY x DESC LIMIT 1") == Kind.OUTPUT_CONVENTION
    assert infer_kind("SELECT name FROM s WHERE x = 1") == Kind.FILTER


# -- schema, models, reliability ------------------------------------------------------------------


def test_migrations_are_versioned_and_idempotent(store: MemoryStore) -> None:
    conn = store.connection()
    assert migrate(conn, store.embedder.name, store.embedder.dim) == []
    versions = [r[0] for r in conn.execute(f"SELECT version FROM {SCHEMA}.migrations ORDER BY 1")]
    assert versions == [1, 2, 3]  # 3: semantic catalog nodes (issue 14)
    indexes = {
        r[0]: r[1]
        for r in conn.execute(
            "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = %s", (SCHEMA,)
        )
    }
    assert (
        "hnsw" in indexes["items_embedding_hnsw"]
        and "vector_cosine_ops" in indexes["items_embedding_hnsw"]
    )
    assert "gin" in indexes["items_tsv_gin"]


def test_dimension_and_model_mismatch_is_refused(store: MemoryStore, db_url: str) -> None:
    store.insert(lesson())
    with pytest.raises(EmbeddingMismatch, match="256-d vectors from 'wordllama/l2_supercat_256'"):
        MemoryStore.open(url=db_url, embedder=HashEmbedder(dim=32))
    with pytest.raises(EmbeddingMismatch, match="other/model"):
        MemoryStore.open(url=db_url, embedder=HashEmbedder(dim=256, name="other/model"))
    # and the database itself refuses a vector of the wrong size
    with pytest.raises(psycopg.errors.DataException):
        store.connection().execute(
            f"UPDATE {SCHEMA}.items SET embedding = %s", (np.ones(32, dtype=np.float32),)
        )


def test_dropped_search_index_is_rebuilt_on_connect(hash_store: MemoryStore, db_url: str) -> None:
    hash_store.connection().execute(f"DROP INDEX {SCHEMA}.items_embedding_hnsw")
    reopened = MemoryStore.open(url=db_url, embedder=HashEmbedder())
    assert missing_search_indexes(reopened.connection()) == []
    reopened.close()


def test_unreachable_external_server_names_url_without_password() -> None:
    url = "postgresql://dia:s3cretpw@127.0.0.1:9/memory"
    with pytest.raises(MemoryStoreUnavailable) as info:
        MemoryStore.open(url=url, embedder=HashEmbedder())
    message = str(info.value)
    assert "postgresql://dia:***@127.0.0.1:9/memory" in message and "s3cretpw" not in message
    assert redact("host=db user=u password=p dbname=m port=5433") == "postgresql://u:***@db:5433/m"


def test_normalize_sql_ignores_case_spacing_and_semicolons() -> None:
    assert normalize_sql("select COUNT(*)  from T;") == normalize_sql("SELECT count(*) FROM t")
    assert normalize_sql("not sql at all ((") == "not sql at all (("


def test_concurrent_writers_lose_nothing_and_duplicate_nothing(db_url: str) -> None:
    """Four processes write 10 shared and 10 own lessons each, at the same moment."""
    MemoryStore.open(url=db_url, embedder=HashEmbedder()).close()  # schema exists first
    code = """
import sys, time
from dia_assets.platform.memory import MemoryStore, NewMemory, Kind
from tests.memory_fixtures import HashEmbedder
worker, url, start = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
store = MemoryStore.open(url=url, embedder=HashEmbedder())
time.sleep(max(0.0, start - time.time()))
def item(tag, i):
    return NewMemory(kind=Kind.JOIN, title=f"{tag} rule {i}", body=f"{tag} body {i}",
                     probe_sql=f"SELECT '{tag}', {i}", scope="db-a")
for i in range(10):
    store.insert(item("shared", i))
    store.insert(item(f"worker{worker}", i))
print("ok")
"""
    import subprocess
    import sys
    import time

    start = time.time() + 2
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(w), db_url, str(start)],
            cwd=Path(__file__).parents[1],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(4)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    check = MemoryStore.open(url=db_url, embedder=HashEmbedder())
    items = check.list_items(MemoryFilter(statuses=list(Status)), limit=1000)
    titles = sorted(i.title for i in items)
    assert len(items) == 50 and len(set(titles)) == 50
    assert all(i.status == Status.ACTIVE for i in items)
    dup_events = (
        check.connection()
        .execute(f"SELECT count(*) FROM {SCHEMA}.events WHERE event = 'duplicate'")
        .fetchone()
    )
    assert dup_events == (30,)
    check.close()


def test_a_duckdb_fingerprint_is_read_once_per_state_of_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One answer asks for its warehouse's fingerprint several times (memory scope, catalog nodes,
    catalog linker): the file is read once while it is unchanged, and again after a schema change."""
    from dia_assets.platform.warehouse import fingerprint

    db = tmp_path / "w.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE t (a INTEGER)")
    con.close()
    opened: list[str] = []
    real = duckdb.connect
    monkeypatch.setattr(duckdb, "connect", lambda *a, **k: opened.append(str(a[0])) or real(*a, **k))
    first = database_fingerprint(db)
    assert database_fingerprint(str(db)) == first and len(opened) == 1

    con = real(str(db))
    con.execute("ALTER TABLE t ADD COLUMN b VARCHAR")
    con.close()
    assert database_fingerprint(db) != first and len(opened) == 2
    assert len(fingerprint._FILE_MEMO) >= 2  # noqa: SLF001
