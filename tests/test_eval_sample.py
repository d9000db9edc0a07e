"""The bundled sample (examples/eval/questions.jsonl): well formed, every gold query checked by
executing it, robust to the data quirks, and scored 100% by the oracle through the full
Query Generator path with `dia eval`."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dia_assets.agents.evaluation.datasets import load_instances
from dia_assets.agents.evaluation.metrics import results_match
from dia_assets.agents.evaluation.runner import read_records, run_eval
from dia_assets.agents.evaluation.solvers import OracleSolver
from tests.eval_fixtures import SAMPLE, sample_wh  # noqa: F401 - fixture
from tests.eval_stand_in import build_sample_warehouse, check_gold

TABLES = {"staff", "shifts", "shifts_assignments", "hospital_departments", "hospital_wards", "payroll"}


def test_sample_is_well_formed() -> None:
    items = load_instances(SAMPLE)
    assert len(items) >= 30
    levels = Counter(i.difficulty for i in items)
    assert set(levels) == {"easy", "medium", "hard"} and min(levels.values()) >= 10
    assert all(i.dialect == "duckdb" and i.db == "hospital" and i.question.endswith(("?", ".")) for i in items)
    assert any(i.order_matters for i in items) and any(i.decimals for i in items)
    assert any(len(i.gold_sql) > 1 for i in items)  # several acceptable gold results
    import sqlglot
    from sqlglot import exp

    for i in items:  # every gold query reads only refined tables of the example warehouse
        for sql in i.gold_sql:
            tree = sqlglot.parse_one(sql, read="duckdb")
            ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
            assert {t.name for t in tree.find_all(exp.Table)} - ctes <= TABLES, i.id


def test_every_gold_query_runs_and_returns_rows(sample_wh: Path) -> None:  # noqa: F811
    results = check_gold(SAMPLE, sample_wh)
    assert [r for r in results if r["error"]] == []
    assert [r["id"] for r in results if r["rows"] == 0] == []
    by_id = {r["id"]: r["result"] for r in results}
    assert by_id["e01_staff_count"] == [(400,)]  # 405 rows, 5 exact duplicates
    assert by_id["e05_cancelled_shifts"] == [(187,)]  # 174 + 7 + 6 spellings
    assert sorted(by_id["h05_former_employees"]) == [("B03828",), ("B05100",), ("B05828",)]


@pytest.mark.parametrize(("canonical", "dedupe"), [(True, False), (False, True)])
def test_gold_does_not_depend_on_dedup_or_spelling(sample_wh: Path, tmp_path: Path, canonical: bool,  # noqa: F811
                                                   dedupe: bool) -> None:
    """The real warehouse drops duplicate staff rows and maps spellings to canonical values;
    the gold SQL must give the same answers whether or not it does (role titles aside)."""
    variant = build_sample_warehouse(tmp_path / "variant.duckdb", canonical=canonical, dedupe=dedupe)
    items = {i.id: i for i in load_instances(SAMPLE)}
    base = check_gold(SAMPLE, sample_wh)
    other = check_gold(SAMPLE, variant)
    differ = [a["id"] for a, b in zip(base, other, strict=True)
              if not results_match(b["result"], a["result"], items[a["id"]].order_matters, items[a["id"]].decimals)]
    allowed = set() if canonical else {i for i, q in items.items() if "canonical_roles" in q.meta.get("tags", [])}
    assert set(differ) <= allowed


def test_gold_gives_the_same_answers_on_the_schema_creators_warehouse(sample_wh: Path, tmp_path: Path,  # noqa: F811
                                                                     example_interpretation) -> None:
    """The stand-in warehouse answers exactly like the real one (examples/data/overrides.yaml applied)."""
    from dia_assets.pipeline import run

    built = run(SAMPLE.parents[1] / "data", tmp_path / "ws", interpretation=example_interpretation,
                overrides_seed=SAMPLE.parents[1] / "data" / "overrides.yaml")
    assert built.report.accepted
    items = {i.id: i for i in load_instances(SAMPLE)}
    real = check_gold(SAMPLE, built.report.warehouse)
    stand_in = check_gold(SAMPLE, sample_wh)
    assert [r for r in real if r["error"]] == []
    differ = [a["id"] for a, b in zip(real, stand_in, strict=True)
              if not results_match(a["result"], b["result"], items[a["id"]].order_matters, items[a["id"]].decimals)]
    assert differ == []


def test_direct_oracle_scores_100(sample_wh: Path, tmp_path: Path) -> None:  # noqa: F811
    summary = run_eval(load_instances(SAMPLE), sample_wh, OracleSolver(), tmp_path / "out", workers=4, ves_iterations=1)
    assert (summary["ex"], summary["soft_f1"], summary["broken"]) == (100.0, 100.0, 0)


def test_dia_eval_oracle_through_the_agent_scores_100_and_resumes(sample_wh: Path, tmp_path: Path) -> None:  # noqa: F811
    """`dia eval examples/eval/questions.jsonl --model oracle`: the litellm oracle provider answers
    with the gold SQL through the Query Generator's loop (contract, safety, verification)."""
    import typer

    from dia_assets.cli.eval import eval as eval_command

    app = typer.Typer()
    app.command("eval")(eval_command)
    app.command("noop")(lambda: None)  # two commands: `eval` is a subcommand, as under `dia`
    out = tmp_path / "out"
    args = ["eval", str(SAMPLE), "--db", str(sample_wh), "--model", "oracle", "--workers", "2",
            "--out", str(out), "--ves-iterations", "0", "--quiet", "--fail-under", "100", "--traces"]
    # half the run first (as if interrupted), then the full command resumes
    lines = SAMPLE.read_text(encoding="utf-8").splitlines()
    half = tmp_path / "half.jsonl"
    half.write_text("\n".join(lines[: len(lines) // 2]) + "\n", encoding="utf-8")
    first = CliRunner().invoke(app, [*args[:1], str(half), *args[2:]])
    assert first.exit_code == 0, first.output
    done = set(read_records(out))
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "EX 100.00%" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["ex"] == 100.0 and summary["scored"] == len(lines)
    assert summary["status_counts"] == {"answered": len(lines)}
    assert summary["tokens_total"] > 0 and summary["attempts_mean"] == 1.0
    records = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    assert len(records) == len(lines)  # the first half was not redone
    assert {r["id"] for r in records[: len(done)]} == done
    traces = sorted((out / "traces").glob("*.json"))
    assert len(traces) == len(lines)
    assert json.loads(traces[0].read_text())["status"] == "answered"


def test_dia_eval_without_a_model_says_what_is_missing(sample_wh: Path, tmp_path: Path,  # noqa: F811
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    import typer

    from dia_assets.cli.eval import eval as eval_command

    monkeypatch.delenv("DIA_MODEL", raising=False)
    app = typer.Typer()
    app.command("eval")(eval_command)
    result = CliRunner().invoke(app, [str(SAMPLE), "--db", str(sample_wh), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "DIA_MODEL" in result.output and "--model oracle" in result.output
    missing = CliRunner().invoke(app, [str(SAMPLE), "--db", str(tmp_path / "nope.duckdb"), "--model", "oracle-direct",
                                       "--out", str(tmp_path / "o2"), "--quiet"])
    assert missing.exit_code == 0  # every instance broken: reported, not a crash
    assert "0 broken" not in missing.output
