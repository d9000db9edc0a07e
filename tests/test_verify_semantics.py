"""Self-verification respects each engine's semantics (issue 28, "zero false refusals"): NULL
order per dialect and per NULLS FIRST/LAST, fan-out only when de-duplication changes the
aggregate's value, ties in ORDER BY never a difference. Each on DuckDB, SQLite and
PostgreSQL (embedded), through the agent's gate and `verify_result`; each with a case where
the check fires on a really wrong query and one where it stays silent on a correct one."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest

from dia_assets.agents.query.contract import parse_contract
from dia_assets.agents.query.dialects import (
    NULLS_FIRST_BY_DEFAULT,
    DuckDBDatabase,
    PostgresDatabase,
    QueryOutput,
    SQLiteDatabase,
    nulls_first_default,
)
from dia_assets.agents.query.schema import SchemaIndex
from dia_assets.agents.query.verify import check_order, verify_result
from dia_assets.platform.sql.gate import Gate
from tests.memory_fixtures import fresh_database_url, pg_server  # noqa: F401 - fixture

# budget has NULLs and a tie (300); every department with staff has exactly two projects;
# employee 1 has two skills, the others one.
DATA = [
    "CREATE TABLE dept (dept_id INTEGER PRIMARY KEY, name VARCHAR(20), budget DOUBLE PRECISION)",
    "CREATE TABLE emp (emp_id INTEGER PRIMARY KEY, dept_id INTEGER, salary INTEGER)",
    "CREATE TABLE project (project_id INTEGER PRIMARY KEY, dept_id INTEGER, title VARCHAR(20))",
    "CREATE TABLE skill (skill_id INTEGER PRIMARY KEY, emp_id INTEGER, skill VARCHAR(20))",
    "CREATE TABLE visit (emp_id INTEGER, day INTEGER, hours INTEGER)",  # no key, none found either
    "INSERT INTO dept VALUES (1, 'Arts', 100.0), (2, 'Biology', NULL), (3, 'Chemistry', 300.0), "
    "(4, 'Drama', NULL), (5, 'Economics', 300.0)",
    "INSERT INTO emp VALUES (1, 1, 10), (2, 1, 20), (3, 3, 30), (4, 3, 50), (5, 5, 40)",
    "INSERT INTO project VALUES (1, 1, 'p1'), (2, 1, 'p2'), (3, 3, 'p3'), (4, 3, 'p4'), (5, 5, 'p5'), (6, 5, 'p6')",
    "INSERT INTO skill VALUES (1, 1, 'a'), (2, 1, 'b'), (3, 2, 'c'), (4, 3, 'd'), (5, 4, 'e'), (6, 5, 'f')",
    "INSERT INTO visit VALUES (1, 1, 5), (1, 1, 5), (2, 1, 4), (3, 2, 6), (3, 2, 6), (5, 3, 1)",
]
ENGINES = ["duckdb", "sqlite", "postgres"]


def _make(engine: str, tmp_path: Path, request: pytest.FixtureRequest) -> Any:
    if engine == "duckdb":
        con = duckdb.connect(str(tmp_path / "w.duckdb"))
        for stmt in DATA:
            con.execute(stmt)
        con.close()
        return DuckDBDatabase(tmp_path / "w.duckdb")
    if engine == "sqlite":
        con = sqlite3.connect(tmp_path / "w.sqlite")
        for stmt in DATA:
            con.execute(stmt)
        con.commit()
        con.close()
        return SQLiteDatabase(tmp_path / "w.sqlite")
    server = request.getfixturevalue("pg_server")
    url = fresh_database_url(server, f"semantics_{os.getpid()}")
    with psycopg.connect(url, autocommit=True) as conn:
        for stmt in DATA:
            conn.execute(stmt)  # type: ignore[arg-type]
    return PostgresDatabase(url)


class Engine:
    """One warehouse as the agent sees it: gate, schema index, verification."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self.index = SchemaIndex.build(db, samples=0)
        self.schema = self.index.qualify_schema()
        self.gate = Gate(db, self.schema)

    def run(self, sql: str) -> tuple[Any, QueryOutput]:
        checked = self.gate.check(sql)
        _, output = self.gate.read(checked, max_rows=1000, timeout_s=30.0, shown=False)
        return checked, output

    def verify(self, contract: dict[str, Any], sql: str) -> dict[str, bool]:
        """{check name: passed} of the agent's verification of `sql` against `contract`."""
        parsed = parse_contract({"kind": "analytical", "allow_empty": True, **contract}, self.schema, self.db.dialect)
        checked, output = self.run(sql)
        v = verify_result(parsed, checked.text, checked.qualified, output, self.db, self.index, 30.0, gate=self.gate)
        self.last = [c for c in v.checks if not c.passed]
        return {c.name: c.passed for c in v.checks}


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    db = _make(request.param, tmp_path, request)
    yield Engine(db)
    db.close()


def _ordered(column: str, direction: str, *more: tuple[str, str]) -> list[dict[str, str]]:
    return [{"column": c, "direction": d} for c, d in ((column, direction), *more)]


# -- NULL order -------------------------------------------------------------------------------


def test_engine_null_order_is_the_one_the_checks_assume(engine: Engine) -> None:
    """The installed engines (DuckDB's version included) put NULLs where the table says."""
    dialect = engine.db.dialect
    for desc in (False, True):
        rows = engine.db.query("SELECT x FROM (SELECT 1 AS x UNION ALL SELECT NULL UNION ALL SELECT 2) AS t "
                               f"ORDER BY x{' DESC' if desc else ''}", 10, 10.0).rows
        assert (rows[0][0] is None) == nulls_first_default(dialect, desc), (dialect, desc, rows)
    assert dialect in NULLS_FIRST_BY_DEFAULT


@pytest.mark.parametrize("direction", ["desc", "asc"])
@pytest.mark.parametrize("nulls", ["", " NULLS FIRST", " NULLS LAST"])
def test_correct_order_over_nulls_passes(engine: Engine, direction: str, nulls: str) -> None:
    contract = {"columns": ["name", "ratio"], "order": _ordered("ratio", direction)}
    sql = f"SELECT name, budget / 100 AS ratio FROM dept ORDER BY ratio {direction.upper()}{nulls}"
    checks = engine.verify(contract, sql)
    assert checks["ordering"] and all(checks.values()), checks


def test_wrong_direction_is_refused(engine: Engine) -> None:
    contract = {"columns": ["name", "ratio"], "order": _ordered("ratio", "desc")}
    checks = engine.verify(contract, "SELECT name, budget / 100 AS ratio FROM dept ORDER BY ratio ASC")
    assert not checks["ordering"]


def test_nulls_where_the_sql_does_not_put_them_are_refused(engine: Engine) -> None:
    """Rows with NULLs last, checked against SQL that puts them first (explicitly, or by this
    engine's default): refused exactly when the engine would have put them first."""
    _, output = engine.run("SELECT name, budget FROM dept ORDER BY budget DESC NULLS LAST")
    assert output.rows[-1][1] is None
    contract = parse_contract({"columns": ["name", "budget"], "order": _ordered("budget", "desc")},
                              engine.schema, engine.db.dialect)
    explicit, _ = engine.run("SELECT name, budget FROM dept ORDER BY budget DESC NULLS FIRST")
    assert not check_order(contract, explicit.qualified, output, engine.db.dialect).passed
    default, _ = engine.run("SELECT name, budget FROM dept ORDER BY budget DESC")
    passed = check_order(contract, default.qualified, output, engine.db.dialect).passed
    assert passed == (not nulls_first_default(engine.db.dialect, desc=True))


# -- ties ---------------------------------------------------------------------------------------


def test_rows_tied_on_the_sort_keys_may_come_in_any_order(engine: Engine) -> None:
    contract = {"columns": ["name", "budget"], "order": _ordered("budget", "desc"), "limit": 1}
    # Chemistry and Economics tie on 300: either order, and either one as the top row
    for tiebreak in ("name ASC", "name DESC"):
        sql = f"SELECT name, budget FROM dept WHERE budget IS NOT NULL ORDER BY budget DESC, {tiebreak} LIMIT 1"
        checks = engine.verify({**contract, "filters": [{"description": "has a budget", "column": "budget",
                                                          "op": "is not null"}]}, sql)
        assert all(checks.values()), (tiebreak, checks, engine.last)


def test_a_different_order_within_ties_is_refused_when_declared(engine: Engine) -> None:
    contract = {"columns": ["name", "budget"], "order": _ordered("budget", "desc", ("name", "asc"))}
    checks = engine.verify(contract, "SELECT name, budget FROM dept ORDER BY budget DESC, name DESC")
    assert not checks["ordering"]


def test_a_wrong_top_k_is_refused(engine: Engine) -> None:
    contract = {"columns": ["name", "budget"], "order": _ordered("budget", "desc"), "limit": 1}
    checks = engine.verify(contract, "SELECT name, budget FROM dept ORDER BY name LIMIT 1")
    assert not checks["row_limit"]


def test_text_differing_only_by_collation_is_a_tie() -> None:
    """A linguistic collation (PostgreSQL's en_US) sorts 'b' before 'C'; byte order does not.
    Neither is refused, but 'b' before 'a' is out of order under both."""
    from sqlglot import parse_one

    contract = parse_contract({"kind": "analytical", "columns": ["name"], "order": _ordered("name", "asc")},
                              {"t": {"name": "VARCHAR"}}, "postgres")
    tree = parse_one("SELECT name FROM t ORDER BY name", read="postgres")
    for rows in (["a", "b", "C"], ["C", "a", "b"], ["a", "B", "c"]):
        assert check_order(contract, tree, QueryOutput(["name"], [(r,) for r in rows]), "postgres").passed, rows
    assert not check_order(contract, tree, QueryOutput(["name"], [("b",), ("a",)]), "postgres").passed


# -- fan-out ------------------------------------------------------------------------------------

GROUPED = {"columns": ["name", "value"], "granularity": {"description": "per department", "key_columns": ["name"]}}
TWO_PROJECTS = ("FROM dept d JOIN emp e ON e.dept_id = d.dept_id JOIN project p ON p.dept_id = d.dept_id "
                "GROUP BY d.name")


@pytest.mark.parametrize("agg", ["AVG(e.salary)", "MIN(e.salary)", "MAX(e.salary)", "COUNT(DISTINCT e.emp_id)"])
def test_a_join_that_repeats_every_row_equally_leaves_these_unchanged(engine: Engine, agg: str) -> None:
    """Every employee appears twice per department (two projects each): AVG, MIN, MAX and
    COUNT(DISTINCT) keep their value, so the fan-out check stays silent."""
    checks = engine.verify(GROUPED, f"SELECT d.name, {agg} AS value {TWO_PROJECTS}")
    assert checks["join_fanout"] and all(checks.values()), checks


@pytest.mark.parametrize("agg", ["SUM(e.salary)", "COUNT(e.salary)"])
def test_the_same_join_doubles_sums_and_counts(engine: Engine, agg: str) -> None:
    checks = engine.verify(GROUPED, f"SELECT d.name, {agg} AS value {TWO_PROJECTS}")
    assert not checks["join_fanout"], checks


def test_avg_over_unequal_repetition_is_refused(engine: Engine) -> None:
    """Employee 1 has two skills: joining skills weights that salary twice in AVG (Arts: 13.3
    instead of 15)."""
    sql = ("SELECT d.name, AVG(e.salary) AS value FROM dept d JOIN emp e ON e.dept_id = d.dept_id "
           "JOIN skill s ON s.emp_id = e.emp_id GROUP BY d.name")
    assert not engine.verify(GROUPED, sql)["join_fanout"]


def test_an_aggregate_reading_a_keyless_table_at_its_grain_passes(engine: Engine) -> None:
    """Each visit row is one row of the join (employees repeat, visits do not): an AVG over an
    expression of both is at the visit's grain, though the employee's key repeats with equal
    values (a line item joined to its order, two lines shipped the same day). The same
    employees' salary alone still fans out."""
    join = "FROM dept d JOIN emp e ON e.dept_id = d.dept_id JOIN visit v ON v.emp_id = e.emp_id GROUP BY d.name"
    assert engine.verify(GROUPED, f"SELECT d.name, AVG(v.hours * e.salary) AS value {join}")["join_fanout"]
    assert not engine.verify(GROUPED, f"SELECT d.name, SUM(e.salary) AS value {join}")["join_fanout"]
    # COUNT(*) may count the visits themselves: with no key to show otherwise, it passes
    assert engine.verify(GROUPED, f"SELECT d.name, COUNT(*) AS value {join}")["join_fanout"]


def test_a_null_filter_that_changes_nothing_passes_and_one_that_drops_rows_is_refused(engine: Engine) -> None:
    """The question asks for no NULL filter: an IS NOT NULL whose rows an AVG ignores anyway
    changes nothing (probed without it); one that drops rows from a count is refused."""
    contract = {"columns": ["value"]}
    assert engine.verify(contract, "SELECT AVG(budget) AS value FROM dept WHERE budget IS NOT NULL")["null_filters"]
    assert not engine.verify(contract, "SELECT COUNT(*) AS value FROM dept WHERE budget IS NOT NULL")["null_filters"]


def test_avg_aggregated_before_the_join_passes(engine: Engine) -> None:
    sql = ("SELECT d.name, a.value FROM dept d JOIN (SELECT dept_id, AVG(salary) AS value FROM emp "
           "GROUP BY dept_id) a ON a.dept_id = d.dept_id")
    assert all(engine.verify({"columns": ["name", "value"]}, sql).values())
