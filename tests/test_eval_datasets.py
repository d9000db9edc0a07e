"""Adapters for BIRD, Spider, defog sql-eval and our JSONL, run end to end with the direct
oracle (gold SQL as the prediction): every set must score 100%."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dia_assets.agents.evaluation.datasets import (
    default_db,
    detect_format,
    expand_defog_gold,
    load_instances,
    transpile_gold,
)
from dia_assets.agents.evaluation.runner import run_eval
from dia_assets.agents.evaluation.solvers import OracleSolver
from tests.eval_fixtures import (
    ScriptedSolver,
    make_duckdb,
    make_sqlite,
    write_bird,
    write_defog,
    write_spider,
)


def test_bird_dev_json(tmp_path: Path) -> None:
    path = write_bird(tmp_path / "bird")
    assert detect_format(path) == "bird"
    items = load_instances(path)
    assert [i.id for i in items] == ["0", "1", "2"]
    assert items[1].prompt().endswith("Hint: top GPA refers to MAX(gpa)")
    assert (items[0].dialect, items[0].difficulty, items[0].order_matters) == ("sqlite", "simple", False)
    db = default_db(path)
    assert db == tmp_path / "bird" / "dev_databases"
    summary = run_eval(items, db, OracleSolver(), tmp_path / "out", ves_iterations=2)
    assert summary["ex"] == 100.0 and summary["soft_f1"] == 100.0
    assert set(summary["by_difficulty"]) == {"simple", "moderate", "challenging"}


def test_spider_order_by_means_order_matters(tmp_path: Path) -> None:
    path = write_spider(tmp_path / "spider")
    items = load_instances(path)
    assert detect_format(path) == "spider"
    assert [i.order_matters for i in items] == [True, False]
    db = default_db(path)
    answers = {items[0].id: "SELECT name FROM student WHERE gpa IS NOT NULL ORDER BY gpa, name"}
    summary = run_eval(items, db, ScriptedSolver(answers), tmp_path / "out", ves_iterations=0)
    assert summary["correct"] == 1
    assert summary["failure_classes"]["output_convention"]["count"] == 1  # right rows, wrong order


def test_defog_alternatives_and_transpilation(tmp_path: Path) -> None:
    assert expand_defog_gold("SELECT {a.id, a.name}, COUNT(*) FROM a GROUP BY {}") == [
        "SELECT a.id, COUNT(*) FROM a GROUP BY a.id",
        "SELECT a.name, COUNT(*) FROM a GROUP BY a.name",
        "SELECT a.id, a.name, COUNT(*) FROM a GROUP BY a.id, a.name",
    ]
    assert expand_defog_gold("SELECT 1; SELECT 2;") == ["SELECT 1", "SELECT 2"]
    path = write_defog(tmp_path / "defog")
    items = load_instances(path)
    assert detect_format(path) == "defog"
    assert len(items[0].gold_sql) == 3 and items[0].dialect == "postgres"
    assert items[1].order_matters and items[1].evidence == "Compare cities case-insensitively"
    answers = {items[0].id: "SELECT d.name, COUNT(s.id) AS n FROM dept d JOIN student s ON s.dept_id = d.id GROUP BY d.name"}
    summary = run_eval(items, tmp_path / "defog" / "school.duckdb", ScriptedSolver(answers), tmp_path / "out",
                       ves_iterations=0)
    assert summary["ex"] == 100.0  # the name-only alternative matches; ILIKE gold ran after transpiling


def test_our_jsonl_with_a_postgres_gold_on_sqlite(tmp_path: Path) -> None:
    make_sqlite(tmp_path / "school.sqlite")
    rows = [
        {"id": "a", "question": "Names from oslo, any case", "gold_sql": "SELECT name FROM student WHERE city ILIKE 'oslo'",
         "db": "school", "dialect": "postgres", "difficulty": "easy"},
        {"id": "b", "question": "GPA as text", "gold_sql": ["SELECT CAST(gpa AS TEXT) FROM student WHERE id = 1", "SELECT '3.5'"],
         "db": "school", "dialect": "postgres", "evidence": "", "difficulty": "medium", "decimals": 1},
    ]
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    items = load_instances(path)
    assert [len(i.gold_sql) for i in items] == [1, 2] and items[1].decimals == 1
    assert "LIKE" in transpile_gold(items[0].gold_sql[0], "postgres", "sqlite").upper()
    summary = run_eval(items, tmp_path / "school.sqlite", OracleSolver(), tmp_path / "out", ves_iterations=0)
    assert summary["ex"] == 100.0


def test_bad_inputs_are_reported(tmp_path: Path) -> None:
    bad = tmp_path / "q.jsonl"
    bad.write_text('{"id": "a", "question": "q"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match="gold_sql"):
        load_instances(bad)
    dup = tmp_path / "d.jsonl"
    dup.write_text('{"id": "a", "question": "q", "gold_sql": "SELECT 1"}\n' * 2, encoding="utf-8")
    with pytest.raises(ValueError, match="duplicate"):
        load_instances(dup)
    with pytest.raises(FileNotFoundError):
        load_instances(tmp_path / "missing.json")
    odd = tmp_path / "x.txt"
    odd.write_text("", encoding="utf-8")
    with pytest.raises(ValueError, match="--format"):
        load_instances(odd)


def test_duckdb_database_file_with_other_suffix(tmp_path: Path) -> None:
    path = make_duckdb(tmp_path / "warehouse.bin")
    rows = [{"id": "a", "question": "q", "gold_sql": "SELECT COUNT(*) FROM student", "dialect": "duckdb"}]
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps(rows[0]) + "\n", encoding="utf-8")
    assert run_eval(load_instances(q), path, OracleSolver(), tmp_path / "out", ves_iterations=0)["ex"] == 100.0


def test_dia_eval_finds_the_benchmark_databases_and_limits(tmp_path: Path) -> None:
    import typer
    from typer.testing import CliRunner

    from dia_assets.cli.eval import eval as eval_command

    path = write_bird(tmp_path / "bird")
    app = typer.Typer()
    app.command("eval")(eval_command)
    out = tmp_path / "out"
    result = CliRunner().invoke(app, [str(path), "--model", "oracle-direct", "--limit", "2", "--out", str(out),
                                      "--quiet", "--ves-iterations", "0"])
    assert result.exit_code == 0, result.output
    assert "EX 100.00%" in result.output and "(2/2 correct, 0 broken)" in result.output
    assert (out / "report.md").exists() and len((out / "results.jsonl").read_text().splitlines()) == 2
    other = CliRunner().invoke(app, [str(path), "--model", "oracle", "--out", str(out), "--quiet"])
    assert other.exit_code == 2 and "another --out" in other.output
