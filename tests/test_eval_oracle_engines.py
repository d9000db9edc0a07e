"""The oracle (gold SQL through the full agent path) answers every bundled question on DuckDB,
SQLite and PostgreSQL (issue 28: no false refusals on any engine). The SQLite and PostgreSQL
warehouses are copies of the DuckDB one (`evaluation.engines`); gold SQL is DuckDB SQL that the
harness transpiles."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import duckdb
import psycopg
import pytest

from dia_assets.agents.evaluation.datasets import load_instances, transpile_gold
from dia_assets.agents.evaluation.engines import copy_to_postgres, copy_to_sqlite
from dia_assets.agents.evaluation.runner import read_records, run_eval
from dia_assets.agents.evaluation.solvers import AgentSolver
from dia_assets.agents.query.loop import AgentSettings
from tests.eval_fixtures import SAMPLE, sample_wh  # noqa: F401 - fixture
from tests.memory_fixtures import fresh_database_url, pg_server  # noqa: F401 - fixture


def _sqlite(sample_wh: Path, tmp_path: Path) -> str:  # noqa: F811
    return str(copy_to_sqlite(sample_wh, tmp_path / "hospital.sqlite"))


def _postgres(sample_wh: Path, request: pytest.FixtureRequest) -> str:  # noqa: F811
    url = fresh_database_url(request.getfixturevalue("pg_server"), f"hospital_{os.getpid()}")
    copy_to_postgres(sample_wh, url)
    return url


@pytest.mark.parametrize("engine", ["duckdb", "sqlite", "postgres"])
def test_oracle_answers_every_bundled_question(engine: str, sample_wh: Path, tmp_path: Path,  # noqa: F811
                                               request: pytest.FixtureRequest) -> None:
    db = {"duckdb": lambda: str(sample_wh), "sqlite": lambda: _sqlite(sample_wh, tmp_path),
          "postgres": lambda: _postgres(sample_wh, request)}[engine]()
    instances = load_instances(SAMPLE)
    # timeouts: correctness, not speed, is tested; the stand-in warehouse has no keys, so SQLite runs
    # m12's join as a nested loop (17 s at load 20, past the 30 s default at load 15-20)
    solver = AgentSolver("oracle", settings=AgentSettings(timeout_s=180.0, transpile_to=()), timeout_s=180.0)
    summary = run_eval(instances, db, solver, tmp_path / "out", workers=2, ves_iterations=0, timeout_s=180.0)
    refused = {r.id: (r.prediction.error if r.prediction else r.broken_reason)
               for r in read_records(tmp_path / "out").values() if r.status != "correct"}
    assert refused == {}
    assert (summary["correct"], summary["broken"], summary["ex"]) == (len(instances), 0, 100.0)


def test_copies_keep_rows_and_types(sample_wh: Path, tmp_path: Path, request: pytest.FixtureRequest) -> None:  # noqa: F811
    src = duckdb.connect(str(sample_wh), read_only=True)
    counts = dict(src.execute("SELECT table_name, estimated_size FROM duckdb_tables() WHERE schema_name = 'main'").fetchall())
    exact = {t: src.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in counts}  # type: ignore[index]
    src.close()
    lite = sqlite3.connect(_sqlite(sample_wh, tmp_path))
    assert {t: lite.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in exact} == exact
    assert lite.execute("SELECT typeof(hourly_rate) FROM staff WHERE hourly_rate IS NOT NULL LIMIT 1").fetchone() == ("real",)
    lite.close()
    url = _postgres(sample_wh, request)
    with psycopg.connect(url) as conn:
        assert {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in exact} == exact  # type: ignore[index,arg-type]
        types = dict(conn.execute("SELECT column_name, data_type FROM information_schema.columns "
                                  "WHERE table_name = 'staff'").fetchall())
        assert types["hourly_rate"] == "numeric" and types["hire_date"] == "date"


@pytest.mark.parametrize(("gold", "expected"), [  # expected: DuckDB's rows, where they are plain
    ("SELECT EXTRACT(year FROM d) AS y, COUNT(*) AS n FROM t GROUP BY 1 ORDER BY y", [(2021, 1), (2022, 2)]),
    ("SELECT MONTH(d) AS m FROM t ORDER BY m", [(1,), (3,), (3,)]),
    ("SELECT date_trunc('month', d) AS m, COUNT(*) AS n FROM t GROUP BY 1 ORDER BY m", None),
    ("SELECT COUNT(*) AS n FROM t WHERE d >= TIMESTAMPTZ '2022-01-01'", [(2,)]),
    ("SELECT ROUND(CAST(x AS DOUBLE) / 3, 2) AS r FROM t ORDER BY r", None),
    # 0.5 rounds away from zero on DuckDB and SQLite, to even on PostgreSQL's double precision
    ("SELECT ROUND(CAST(x AS DOUBLE) / 2) AS r FROM t ORDER BY r", [(1.0,), (1.0,), (2.0,)]),
])
def test_gold_sql_transpiles_to_what_each_engine_runs(gold: str, expected: list | None, tmp_path: Path,
                                                     request: pytest.FixtureRequest) -> None:
    """sqlglot alone leaves EXTRACT, date_trunc and timestamptz for SQLite and ROUND(double[, n])
    for PostgreSQL; the harness's transpilation runs on both with the DuckDB answer."""
    rows = [("2021-03-05", 1), ("2022-01-10", 2), ("2022-03-01", 4)]
    wh = tmp_path / "t.duckdb"
    con = duckdb.connect(str(wh))
    con.execute("CREATE TABLE t (d DATE, x INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", rows)
    want = con.execute(gold).fetchall()
    con.close()
    lite = sqlite3.connect(copy_to_sqlite(wh, tmp_path / "t.sqlite"))
    got_lite = lite.execute(transpile_gold(gold, "duckdb", "sqlite")).fetchall()
    url = fresh_database_url(request.getfixturevalue("pg_server"), f"transpile_{os.getpid()}")
    copy_to_postgres(wh, url)
    with psycopg.connect(url) as conn:
        got_pg = conn.execute(transpile_gold(gold, "duckdb", "postgres")).fetchall()  # type: ignore[arg-type]
    if expected is not None:
        assert want == expected
    last = [[float(r[-1]) for r in got] for got in (want, got_lite, got_pg)]
    assert last[0] == last[1] == last[2]
