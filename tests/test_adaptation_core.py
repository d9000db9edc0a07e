"""Drift, replanning and quality rules on crafted before/after data (no Dagster)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from dia_assets.agents.adaptation.answer_quality import AnswerRecord, assess
from dia_assets.agents.adaptation.drift import compare
from dia_assets.agents.adaptation.replan import affected_partitions
from dia_assets.agents.adaptation.snapshot import diff, run_key, snapshot
from dia_assets.agents.interpreter import interpret


def _orders(n: int = 400, *, extra: bool = False, null_every: int = 0, shift: float = 0.0,
            dup_key: bool = False, amount_text: bool = False, seed: int = 1) -> str:
    rng = random.Random(seed)
    lines = ["order_id,customer_id,status,amount" + (",channel" if extra else "")]
    for i in range(1, n + 1):
        status = rng.choices(["open", "shipped", "returned"], weights=[1, 3, 1] if not shift else [3, 1, 1])[0]
        amount = f"{rng.uniform(10, 100) + shift:.2f}"
        if amount_text and i % 50 == 0:
            amount = "unknown"
        customer = "" if null_every and i % null_every == 0 else str(rng.randint(1, 40))
        oid = 7 if dup_key and i == 9 else i
        lines.append(f"{oid},{customer},{status},{amount}" + (",web" if extra else ""))
    return "\n".join(lines) + "\n"


def _interp(tmp_path: Path, name: str, text: str):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "orders.csv").write_text(text)
    return interpret(folder)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    return _interp(tmp_path_factory.mktemp("b"), "before", _orders())


def _kinds(report):
    return {(c.kind, c.column) for c in report.changes}


def test_unchanged_data_raises_no_alert(baseline, tmp_path):
    assert not compare(baseline, _interp(tmp_path, "same", _orders())).any


def test_added_column_is_schema_drift(baseline, tmp_path):
    report = compare(baseline, _interp(tmp_path, "a", _orders(extra=True)))
    assert ("column_added", "channel") in _kinds(report) and report.schema_changed


def test_type_change(baseline, tmp_path):
    text = _orders().replace(",shipped,", ",shipped,").splitlines()
    text = [text[0]] + [line.rsplit(",", 1)[0] + ",n/a-" + line.rsplit(",", 1)[1] for line in text[1:]]
    report = compare(baseline, _interp(tmp_path, "t", "\n".join(text) + "\n"))
    assert ("type_changed", "amount") in _kinds(report)


def test_null_rate_jump(baseline, tmp_path):
    report = compare(baseline, _interp(tmp_path, "n", _orders(null_every=4)))
    assert ("null_rate_jump", "customer_id") in _kinds(report) and not report.schema_changed


def test_distribution_shift_categorical_and_numeric(baseline, tmp_path):
    report = compare(baseline, _interp(tmp_path, "d", _orders(shift=60.0)))
    kinds = _kinds(report)
    assert ("distribution_shift", "status") in kinds and ("distribution_shift", "amount") in kinds


def test_key_breakage(baseline, tmp_path):
    report = compare(baseline, _interp(tmp_path, "k", _orders(dup_key=True)))
    assert ("primary_key_broken", None) in _kinds(report)
    assert report.affected()["orders"] is None


def test_rename_is_recognised(baseline, tmp_path):
    text = _orders().replace("customer_id", "client_id", 1)
    report = compare(baseline, _interp(tmp_path, "r", text))
    assert ("column_renamed", "client_id") in _kinds(report)
    assert report.affected()["orders"] == {"client_id", "customer_id"}


def test_replanning_selects_only_affected_partitions():
    queries = {
        "revenue": "SELECT sum(o.amount) FROM orders o",
        "by_customer": "SELECT customer_id, count(*) FROM orders GROUP BY 1",
        "staff": "SELECT count(*) FROM staff",
        "broken": "SELEC nonsense",
    }
    assert affected_partitions(queries, {"orders": {"amount"}}) == ["revenue"]
    assert affected_partitions(queries, {"orders": None}) == ["by_customer", "revenue"]
    assert affected_partitions(queries, {"payroll": None}) == []


def test_folder_snapshot_diff_and_stable_run_key(tmp_path):
    (tmp_path / "a.csv").write_text("x\n1\n")
    before = snapshot(tmp_path)
    (tmp_path / "a.csv").write_text("x\n2\n")
    (tmp_path / "b.csv").write_text("y\n1\n")
    after = snapshot(tmp_path)
    change = diff(before, after)
    assert (change.added, change.changed, change.deleted) == (["b.csv"], ["a.csv"], [])
    assert diff(after, {"b.csv": after["b.csv"]}).deleted == ["a.csv"]
    assert run_key(after) == run_key(dict(reversed(list(after.items())))) != run_key(before)
    # a change's key includes where it came from: a revert is a new change
    assert run_key(after, before) == run_key(after, dict(before)) != run_key(after, {})
    assert run_key(before, after) != run_key(before, {})


def test_quality_degradation_against_trailing_baseline():
    good = [AnswerRecord(partition=f"q{i}", status="answered", verified=True, timestamp=i) for i in range(30)]
    bad = [AnswerRecord(partition=f"q{i}", status="failed" if i % 2 else "answered", verified=i % 2 == 0,
                        timestamp=100 + i) for i in range(10)]
    verdict = assess(good + bad)
    assert verdict.degraded and verdict.failed_partitions == ["q1", "q3", "q5", "q7", "q9"]
    assert not assess(good).degraded


def test_small_table_scaled_measure_is_a_shift(tmp_path):
    """Issue 16: PSI is skipped below 50 rows; a small table uses mean/min/max instead."""
    before = _interp(tmp_path, "small_before", _orders(30))
    tripled = _orders(30).splitlines()
    scaled = [tripled[0]] + [",".join([*r.split(",")[:3], f"{float(r.split(',')[3]) * 3:.2f}"]) for r in tripled[1:]]
    after = _interp(tmp_path, "small_after", "\n".join(scaled) + "\n")
    shifts = [c for c in compare(before, after).changes if c.kind == "distribution_shift"]
    assert [(c.column, c.test) for c in shifts] == [("amount", "mean/min/max")]
    assert not compare(before, _interp(tmp_path, "small_same", _orders(30))).any


def test_small_table_categories_use_chi_square(tmp_path):
    before = _interp(tmp_path, "cat_before", _orders(40))
    after = _interp(tmp_path, "cat_after", _orders(40, shift=0.001))  # status weights flip, amounts barely move
    kinds = {(c.kind, c.column, c.test) for c in compare(before, after).changes}
    assert ("distribution_shift", "status", "chi-square") in kinds


def test_growth_of_exact_duplicates_is_drift(baseline, tmp_path):
    text = _orders()
    rows = text.splitlines()
    after = _interp(tmp_path, "dups", text + "\n".join(rows[1:6]) + "\n")
    changes = [c for c in compare(baseline, after).changes if c.kind == "duplicate_rows_grew"]
    assert [(c.source, c.before, c.after) for c in changes] == [("orders", "0", "5")]
