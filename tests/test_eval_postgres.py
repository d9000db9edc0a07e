"""PostgreSQL databases (embedded pgserver): `{db}` URLs, transpiled gold, read-only, timeouts."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from dia_assets.agents.evaluation.databases import DatabaseResolver, QueryTimeout
from dia_assets.agents.evaluation.runner import run_eval
from dia_assets.agents.evaluation.solvers import OracleSolver
from tests.eval_fixtures import SCHOOL, ScriptedSolver, instance
from tests.memory_fixtures import fresh_database_url, pg_server  # noqa: F401 - fixture


@pytest.fixture
def pg_template(pg_server) -> str:  # noqa: F811
    """A URL with `{db}`, and a database `school_<pid>` behind it."""
    url = fresh_database_url(pg_server, f"school_{os.getpid()}")
    with psycopg.connect(url, autocommit=True) as conn:
        for stmt in SCHOOL:
            conn.execute(stmt.replace(" REAL", " DOUBLE PRECISION"))  # type: ignore[arg-type]
    return urlunsplit(urlsplit(url)._replace(path="/{db}")).replace("%7Bdb%7D", "{db}")


def test_postgres_gold_from_sqlite_dialect_scores_100(pg_template: str, tmp_path: Path) -> None:
    db_id = f"school_{os.getpid()}"
    items = [
        instance("count", "SELECT COUNT(*) FROM student", db=db_id),
        instance("concat", "SELECT name || '@' || city FROM student WHERE city IS NOT NULL", db=db_id),
        instance("avg", "SELECT AVG(gpa) FROM student", db=db_id, decimals=3),
    ]
    summary = run_eval(items, pg_template, OracleSolver(), tmp_path / "out", workers=2, ves_iterations=1)
    assert (summary["ex"], summary["broken"]) == (100.0, 0)


def test_postgres_is_read_only_with_a_timeout(pg_template: str, tmp_path: Path) -> None:
    db = DatabaseResolver(pg_template).open(f"school_{os.getpid()}")
    try:
        assert db.dialect == "postgres" and "student" in db.schema()
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            db.query("DELETE FROM student")
        with pytest.raises(QueryTimeout):
            db.query("SELECT pg_sleep(5)", timeout_s=0.2)
        assert db.query("SELECT COUNT(*) FROM student").rows == [(5,)]  # still usable
    finally:
        db.close()
    rec_items = [instance("g", "SELECT name FROM student", db=f"school_{os.getpid()}")]
    summary = run_eval(rec_items, pg_template, ScriptedSolver({"g": "SELECT nam FROM student"}), tmp_path / "o",
                       ves_iterations=0)
    assert summary["failure_classes"]["grounding"]["count"] == 1
