"""The runner: parallel workers, resume after an interruption, broken instances, reports."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dia_assets.agents.evaluation.models import RunConfig
from dia_assets.agents.evaluation.runner import RESULTS, EvalError, read_records, run_eval
from tests.eval_fixtures import ScriptedSolver, instance, make_sqlite

QUESTIONS = [
    instance("count", "SELECT COUNT(*) FROM student", difficulty="easy"),
    instance("oslo", "SELECT name FROM student WHERE city = 'Oslo'", difficulty="easy"),
    instance("best", "SELECT name FROM student WHERE gpa = (SELECT MAX(gpa) FROM student)", difficulty="hard"),
    instance("depts", "SELECT d.name, COUNT(s.id) FROM dept d JOIN student s ON s.dept_id = d.id GROUP BY d.name",
             difficulty="hard"),
    instance("broken", "SELECT missing_column FROM student", difficulty="hard"),
    instance("avg", "SELECT AVG(gpa) FROM student", difficulty="easy", decimals=2),
]
ANSWERS = {
    "oslo": "SELECT name, city FROM student WHERE city = 'Oslo'",  # extra column
    "best": "SELECT name FROM student ORDER BY gpa DESC LIMIT 1",  # drops a tie: reasoning
    "avg": "SELECT ROUND(AVG(gpa), 2) FROM student",  # right at two decimals
}


@pytest.fixture
def school(tmp_path: Path) -> Path:
    return make_sqlite(tmp_path / "school.sqlite")


def test_scores_summary_and_reports(school: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    solver = ScriptedSolver(ANSWERS)
    summary = run_eval(QUESTIONS, school, solver, out, workers=3, ves_iterations=2)
    # 6 instances, 1 broken; correct: count, depts, avg -> EX 3/5 = 60%
    assert (summary["instances"], summary["scored"], summary["broken"], summary["correct"]) == (6, 5, 1, 3)
    assert summary["ex"] == 60.0
    assert summary["failure_classes"]["output_convention"]["count"] == 1
    assert summary["failure_classes"]["reasoning"]["count"] == 1
    assert summary["by_difficulty"]["easy"]["ex"] == pytest.approx(100 * 2 / 3, abs=0.01)
    assert summary["broken_instances"][0]["id"] == "broken"
    assert sorted(solver.calls) == ["avg", "best", "count", "depts", "oslo"]  # not asked for the broken one
    assert summary["status_counts"] == {"answered": 5}
    assert summary["tokens_total"] == 50 and summary["cost_usd_total"] == pytest.approx(0.005)
    assert summary["latency_s"]["p50"] == 3.0  # scripted latencies 1..5
    assert summary["latency_s"]["p90"] == pytest.approx(4.6)
    assert summary["ves"] is not None and 0 < summary["ves"] <= 125 * 3 / 5
    lines = (out / RESULTS).read_text().splitlines()
    assert len(lines) == 6 and {json.loads(x)["id"] for x in lines} == {q.id for q in QUESTIONS}
    assert json.loads((out / "summary.json").read_text())["ex"] == 60.0
    report = (out / "report.md").read_text()
    for part in ("| 6 | 5 | 1 | 3 | 60.00 |", "## Failure classes", "| oslo | output_convention |",
                 "## Broken instances", "p90"):
        assert part in report


def test_interrupted_run_resumes_without_redoing_work(school: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"

    def stop_at_fourth(n: int) -> None:
        if n == 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_eval(QUESTIONS, school, ScriptedSolver(ANSWERS, on_call=stop_at_fourth), out, workers=1, ves_iterations=0)
    first = read_records(out)
    assert set(first) == {"count", "oslo", "best"}  # stopped while solving the fourth, "depts"
    # a torn last line (killed mid-write) is ignored and that instance redone
    with (out / RESULTS).open("a") as fh:
        fh.write('{"id": "depts", "status": "corr')
    again = ScriptedSolver(ANSWERS)
    summary = run_eval(QUESTIONS, school, again, out, workers=2, ves_iterations=0)
    assert sorted(again.calls) == ["avg", "depts"]
    assert summary["instances"] == 6 and summary["correct"] == 3
    third = ScriptedSolver(ANSWERS)
    run_eval(QUESTIONS, school, third, out, workers=2)
    assert third.calls == []  # everything already scored


def test_resume_refuses_another_model(school: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cfg = RunConfig(questions="q", db=str(school), solver="scripted", model="a")
    run_eval(QUESTIONS[:1], school, ScriptedSolver({}), out, config=cfg, ves_iterations=0)
    other = RunConfig(questions="q", db=str(school), solver="scripted", model="b")
    with pytest.raises(EvalError, match="another --out"):
        run_eval(QUESTIONS[:1], school, ScriptedSolver({}), out, config=other)
    run_eval(QUESTIONS[:1], school, ScriptedSolver({}), out, config=other, force=True)


def test_unopenable_database_is_broken(tmp_path: Path) -> None:
    folder = tmp_path / "dbs"
    make_sqlite(folder / "school" / "school.sqlite")
    items = [instance("a", "SELECT 1"), instance("b", "SELECT 1", db="elsewhere")]
    summary = run_eval(items, folder, ScriptedSolver({}), tmp_path / "out", ves_iterations=0)
    assert (summary["correct"], summary["broken"]) == (1, 1)
    assert "no database for 'elsewhere'" in summary["broken_instances"][0]["reason"]
    make_sqlite(folder / "elsewhere.sqlite")  # fixed: a resumed run tries the broken instance again
    solver = ScriptedSolver({})
    again = run_eval(items, folder, solver, tmp_path / "out", ves_iterations=0)
    assert (again["correct"], again["broken"], solver.calls) == (2, 0, ["b"])


def test_progress_reports_every_instance(school: Path, tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    run_eval(QUESTIONS, school, ScriptedSolver({}), tmp_path / "out", workers=4, ves_iterations=0,
             progress=lambda done, total, rec: seen.append((done, total)))
    assert seen[0] == (0, 6) and seen[-1] == (6, 6) and len(seen) == 7


def test_custom_evaluators_are_plain_objects(school: Path, tmp_path: Path) -> None:
    from dataclasses import dataclass
    from typing import Any

    from dia_assets.agents.evaluation.evaluators import (
        Evaluator,
        ScoringContext,
        default_evaluators,
    )

    @dataclass
    class RowCount:
        name: str = "row_count"

        def evaluate(self, ctx: ScoringContext) -> dict[str, Any]:
            return {"pred_rows": len(ctx.pred.rows) if ctx.pred else None, "ex_seen": ctx.scores["ex"]}

    assert isinstance(RowCount(), Evaluator)
    out = tmp_path / "out"
    run_eval(QUESTIONS[:2], school, ScriptedSolver(ANSWERS), out, evaluators=[*default_evaluators(0), RowCount()])
    records = read_records(out)
    assert records["count"].extra == {"pred_rows": 1, "ex_seen": 1}
    assert records["oslo"].extra == {"pred_rows": 2, "ex_seen": 0}
    assert records["oslo"].failure_class == "output_convention"
