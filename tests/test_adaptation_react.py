"""The drift reaction as plain data (agents/adaptation/react.py, kinds.py, replan.py): no Dagster."""

from __future__ import annotations

from pathlib import Path

import pytest

from dia_assets.agents.adaptation.drift import Change, DriftReport, DriftThresholds
from dia_assets.agents.adaptation.kinds import KEY_KINDS, KINDS, SCHEMA_KINDS, ChangeKind
from dia_assets.agents.adaptation.react import FailCheck, ReviewLine, RunJob, append_review, react
from dia_assets.agents.adaptation.replan import named_reads, replan_partitions, saved_reads
from dia_assets.contracts.query_result import QueryResult
from dia_assets.platform.settings import Settings, reset_settings

ANSWERS = {
    "revenue": {"orders": ["amount"]},
    "count": {"orders": []},  # COUNT(*) only
    "people": {"staff": ["name"]},
}


def _report(*changes: Change) -> DriftReport:
    return DriftReport(before="a", after="b", changes=list(changes))


def test_the_kind_table_is_the_one_list():
    from typing import get_args

    assert set(KINDS) == set(get_args(ChangeKind))
    assert sorted(SCHEMA_KINDS) == ["column_added", "column_removed", "column_renamed", "source_added",
                                    "source_removed", "type_changed"]
    assert sorted(KEY_KINDS) == ["duplicate_rows_grew", "fk_coverage_drop", "primary_key_broken"]
    for kind in KINDS.values():  # every threshold a kind names is a setting (DIA_<FIELD>)
        assert all(name in Settings.model_fields for name in kind.thresholds), kind


def test_table_scoped_kinds_affect_the_whole_source():
    report = _report(Change(kind="duplicate_rows_grew", source="orders"),
                     Change(kind="null_rate_jump", source="staff", column="name"),
                     Change(kind="column_renamed", source="staff", column="full_name", before="name"))
    assert report.affected() == {"orders": None, "staff": {"name", "full_name"}}


def test_thresholds_default_to_and_read_the_settings(monkeypatch: pytest.MonkeyPatch):
    assert DriftThresholds().psi == Settings.model_fields["drift_psi"].default
    monkeypatch.setenv("DIA_DRIFT_PSI", "0.5")
    monkeypatch.setenv("DIA_DRIFT_NULL_JUMP", "0.3")
    reset_settings()
    limits = DriftThresholds.from_settings()
    assert (limits.psi, limits.null_rate_jump) == (0.5, 0.3)


def test_column_drift_runs_checks_and_replans_the_answers_that_read_the_column():
    report = _report(Change(kind="null_rate_jump", source="orders", column="amount"))
    got = react(report, "v" * 20, ANSWERS)
    assert got == [
        RunJob("checks", "drift-check-" + "v" * 16,
               {"dia/trigger": "drift", "dia/drift": "null_rate_jump", "dia/tables": "orders"}),
        RunJob("replan", "drift-replan-" + "v" * 16 + "-revenue",
               {"dia/trigger": "drift", "dia/drift": "null_rate_jump"}, partition="revenue"),
    ]


def test_schema_drift_rebuilds_unless_the_build_did():
    report = _report(Change(kind="column_added", source="orders", column="channel"))
    jobs = [r.job for r in react(report, "v1", ANSWERS) if isinstance(r, RunJob)]
    assert jobs == ["schema", "checks"]  # no answer read the new column
    assert [r.job for r in react(report, "v1", ANSWERS, rebuild_schema=False)] == ["checks"]


def test_a_key_break_fails_key_validity_and_asks_for_review():
    broken = Change(kind="primary_key_broken", source="orders", before="order_id", after="no key")
    got = react(_report(broken, Change(kind="column_added", source="staff", column="x")), "v1", ANSWERS,
                questions={"count"})
    assert [(r.job, r.partition) for r in got if isinstance(r, RunJob)] == [
        ("schema", None), ("checks", None), ("replan", "count")]  # table-wide: COUNT(*) counts; revenue unregistered
    assert [r for r in got if isinstance(r, FailCheck)] == [FailCheck("key_validity", broken)]
    assert [r for r in got if isinstance(r, ReviewLine)] == [ReviewLine("- [ ] primary_key_broken orders: order_id -> no key")]
    assert react(_report(), "v1", ANSWERS) == []


def test_review_lines_are_appended_under_a_header(tmp_path: Path):
    path = append_review([ReviewLine("- [ ] one")], tmp_path, Path("d1.json"))
    append_review([ReviewLine("- [ ] two")], tmp_path, Path("d2.json"))
    text = path.read_text()
    assert text.count("# Drift to review") == 1 and text.index("(d1.json)") < text.index("- [ ] one") < text.index("(d2.json)")


def test_replanning_reads_the_stored_reads_not_the_names_in_the_sql(tmp_path: Path):
    """Slice 5's behaviour change: an answer's recorded reads decide, the SQL's names only when
    none were recorded."""
    cte = "WITH customers AS (SELECT customer_id, amount FROM orders) SELECT count(*) FROM customers"
    star = "SELECT * FROM products"
    for qid, sql, reads in (("cte", cte, {"orders": ["amount", "customer_id"]}),
                            ("star", star, {"products": ["name", "price"]}),
                            ("bare", "SELECT city FROM customers", None)):
        folder = tmp_path / "queries" / qid
        folder.mkdir(parents=True)
        (folder / "query.sql").write_text(sql)
        if reads is not None:
            QueryResult(question_id=qid, question="?", status="answered", sql=sql, reads=reads).write(folder / "result.json")
    answers = saved_reads(tmp_path)
    assert answers["cte"] == {"orders": ["amount", "customer_id"]} and answers["bare"] == {"customers": ["city"]}
    assert replan_partitions(answers, {"customers": None}) == ["bare"]  # the CTE is no read of the table
    assert replan_partitions(answers, {"products": {"price"}}) == ["star"]  # SELECT * read it
    # the name match this replaces got both wrong
    old = {"cte": named_reads(cte), "star": named_reads(star)}
    assert replan_partitions(old, {"customers": None}) == ["cte"]
    assert replan_partitions(old, {"products": {"price"}}) == []


def test_falling_quality_reanswers_the_failures_with_fresh_memory(tmp_path: Path):
    from dia_assets.agents.adaptation.answer_quality import QualityVerdict
    from dia_assets.agents.adaptation.react import quality_diagnosis, react_to_quality

    verdict = QualityVerdict(degraded=True, recent_success=0.5, baseline_success=1.0, recent_verified=None,
                             baseline_verified=None, failed_partitions=["q1", "q2"], reason="success rate 50% vs 100%")
    assert react_to_quality(verdict, 7) == [
        RunJob("replan", f"quality-7-{q}", {"dia/trigger": "quality", "dia/fresh_memory": "true"}, partition=q)
        for q in ("q1", "q2")]
    assert react_to_quality(verdict.model_copy(update={"degraded": False}), 7) == []
    assert "no drift recorded" in quality_diagnosis(verdict, tmp_path)
    (tmp_path / "drift").mkdir()
    (tmp_path / "drift" / "1.json").write_text(_report(Change(kind="duplicate_rows_grew", source="orders"),
                                                      Change(kind="null_rate_jump", source="orders", column="amount"))
                                              .model_dump_json())
    text = quality_diagnosis(verdict, tmp_path)
    assert "- duplicate_rows_grew orders.*\n- null_rate_jump orders.amount\n" in text and "- q2\n" in text
