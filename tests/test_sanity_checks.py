"""Contract-free sanity checks (issue 28): each fires on a wrong query and stays silent on the
correct one, on DuckDB and SQLite, with keys and semantic types as the Interpreter gives them."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import duckdb
import pytest

from dia_assets.agents.query.contract import parse_contract
from dia_assets.agents.query.dialects import DuckDBDatabase, SQLiteDatabase
from dia_assets.agents.query.sanity import sanity_checks
from dia_assets.agents.query.schema import SchemaIndex
from dia_assets.agents.query.verify import verify_result
from dia_assets.platform.sql.gate import Gate

DDL = [
    "CREATE TABLE dept (dept_id INTEGER PRIMARY KEY, dept_name VARCHAR, postal_code VARCHAR, head_emp_id INTEGER)",
    "CREATE TABLE emp (emp_id INTEGER PRIMARY KEY, dept_id INTEGER, manager_id INTEGER, name VARCHAR, "
    "salary DOUBLE, bonus DOUBLE, hire_year INTEGER)",
    "CREATE TABLE project (project_id INTEGER PRIMARY KEY, emp_id INTEGER, budget DOUBLE)",
    "INSERT INTO dept VALUES (1, 'Sales', '1000', 101), (2, 'IT', '2000', 103), (3, 'Legal', '3000', 105), "
    "(4, 'Empty', '4000', NULL)",
    "INSERT INTO emp VALUES (101, 1, NULL, 'Ann', 100, 10, 2020), (102, 1, 101, 'Ben', 200, NULL, 2021), "
    "(103, 2, 101, 'Cat', 300, 5, 2021), (104, 2, 103, 'Dan', 50, NULL, 2022), (105, 3, 101, 'Eve', 80, 1, 2022)",
    "INSERT INTO project VALUES (1, 101, 1000), (2, 103, 500), (3, 103, 700)",
]
KEYS = {"dept": ["dept_id"], "emp": ["emp_id"], "project": ["project_id"]}
FKS = {"emp": ["dept_id -> dept.dept_id", "manager_id -> emp.emp_id"], "project": ["emp_id -> emp.emp_id"]}
SEMANTIC = {("dept", "postal_code"): "postal_code", ("emp", "salary"): "decimal", ("emp", "hire_year"): "integer",
            ("emp", "emp_id"): "id", ("dept", "dept_id"): "id", ("dept", "head_emp_id"): "id"}


def _make(engine: str, folder: Path) -> Any:
    if engine == "duckdb":
        path = folder / "w.duckdb"
        con = duckdb.connect(str(path))
        for stmt in DDL:
            con.execute(stmt)
        con.close()
        return DuckDBDatabase(str(path))
    path = folder / "w.sqlite"
    con = sqlite3.connect(path)
    for stmt in DDL:
        con.execute(stmt.replace("DOUBLE", "REAL"))
    con.commit()
    con.close()
    return SQLiteDatabase(path)


@pytest.fixture(scope="module", params=["duckdb", "sqlite"])
def env(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, SchemaIndex, Gate]:
    db = _make(request.param, tmp_path_factory.mktemp(request.param))
    index = SchemaIndex.build(db, samples=0)
    for table, key in KEYS.items():
        index.tables[table].primary_key = key
        index.tables[table].foreign_keys = FKS.get(table, [])
    for (table, column), semantic in SEMANTIC.items():
        index.tables[table].column(column).semantic = semantic  # type: ignore[union-attr]
    return db, index, Gate(db, index.qualify_schema())


def _failed(env: Any, sql: str, question: str | None = None) -> dict[str, str]:
    db, index, gate = env
    checked = gate.check(sql)
    return {c.name: c.detail for c in sanity_checks(checked.qualified, question, db, index, 10) if not c.passed}


# -- wrong join key -------------------------------------------------------------------------------

def test_join_key_fires_on_a_key_the_tables_are_not_linked_by(env: Any) -> None:
    failed = _failed(env, "SELECT d.dept_name, COUNT(*) AS n FROM emp e JOIN dept d ON e.manager_id = d.dept_id "
                          "GROUP BY d.dept_name")
    assert "join_key" in failed and "linked by a known key" in failed["join_key"]


def test_join_key_fires_on_columns_of_different_entities(env: Any) -> None:
    failed = _failed(env, "SELECT d.dept_name, p.budget FROM project p JOIN dept d ON p.emp_id = d.dept_id")
    assert "join_key" in failed and "identifies emp" in failed["join_key"]


def test_join_key_silent_on_the_foreign_key_and_a_self_join(env: Any) -> None:
    assert _failed(env, "SELECT d.dept_name, COUNT(*) AS n FROM emp e JOIN dept d ON e.dept_id = d.dept_id "
                        "GROUP BY d.dept_name") == {}
    assert _failed(env, "SELECT e.name, m.name AS manager FROM emp e JOIN emp m ON e.manager_id = m.emp_id") == {}


def test_join_key_silent_on_an_unrecorded_foreign_key(env: Any) -> None:
    """dept.head_emp_id -> emp.emp_id is no recorded key, but every head is an employee and
    emp_id is unique: the shape of a foreign key, not evidence of a mistake."""
    assert _failed(env, "SELECT d.dept_name, e.name FROM dept d JOIN emp e ON d.head_emp_id = e.emp_id") == {}


def test_join_key_fires_on_inclusion_into_a_non_unique_column(env: Any) -> None:
    """Every project.emp_id is also some manager_id, but manager_id repeats: ids of one entity
    overlapping another's are no key pair (emp_id is)."""
    failed = _failed(env, "SELECT p.budget, e.name FROM project p JOIN emp e ON p.emp_id = e.manager_id")
    assert "join_key" in failed


def test_join_key_fires_on_a_key_joined_to_a_postal_code(env: Any) -> None:
    assert "join_key" in _failed(env, "SELECT d.dept_name, e.name FROM emp e JOIN dept d ON e.dept_id = d.postal_code")


# -- aggregate vs semantic type -------------------------------------------------------------------

def test_aggregate_fires_on_sum_of_a_key_a_year_and_avg_of_a_foreign_key(env: Any) -> None:
    assert "aggregate_semantics" in _failed(env, "SELECT SUM(dept_id) AS total FROM emp")
    assert "aggregate_semantics" in _failed(env, "SELECT SUM(hire_year) AS total FROM emp")
    assert "aggregate_semantics" in _failed(env, "SELECT AVG(emp_id) AS a FROM project")


def test_aggregate_silent_on_quantities(env: Any) -> None:
    assert _failed(env, "SELECT SUM(salary) AS total, AVG(hire_year) AS avg_year, AVG(budget) AS b FROM emp "
                        "JOIN project ON project.emp_id = emp.emp_id") == {}


# -- COUNT(col) with NULLs --------------------------------------------------------------------------

def test_count_column_fires_when_the_question_counts_rows(env: Any) -> None:
    failed = _failed(env, "SELECT d.dept_name, COUNT(e.bonus) AS n FROM emp e JOIN dept d ON e.dept_id = d.dept_id "
                          "GROUP BY d.dept_name", "How many employees work in each department?")
    assert "count_nulls" in failed and "bonus" in failed["count_nulls"]


def test_count_column_silent_on_count_star_a_named_column_and_an_outer_join(env: Any) -> None:
    q = "How many employees work in each department?"
    assert _failed(env, "SELECT d.dept_name, COUNT(*) AS n FROM emp e JOIN dept d ON e.dept_id = d.dept_id "
                        "GROUP BY d.dept_name", q) == {}
    assert _failed(env, "SELECT COUNT(bonus) AS n FROM emp", "How many employees get a bonus?") == {}
    assert _failed(env, "SELECT d.dept_name, COUNT(e.emp_id) AS n FROM dept d LEFT JOIN emp e "
                        "ON e.dept_id = d.dept_id GROUP BY d.dept_name",
                   "How many employees does every department have, including those with none?") == {}
    assert _failed(env, "SELECT COUNT(name) AS n FROM emp", "How many employees are there?") == {}  # no NULLs


# -- INNER join that drops kept rows ----------------------------------------------------------------

Q_ALL = "List all departments with the number of employees in each, including those with none."


def test_inner_join_fires_when_the_question_keeps_every_row(env: Any) -> None:
    failed = _failed(env, "SELECT d.dept_name, COUNT(*) AS n FROM dept d JOIN emp e ON e.dept_id = d.dept_id "
                          "GROUP BY d.dept_name", Q_ALL)
    assert "inner_join_drops" in failed and "drops 1" in failed["inner_join_drops"]


def test_inner_join_silent_on_left_join_and_when_nothing_is_dropped(env: Any) -> None:
    assert _failed(env, "SELECT d.dept_name, COUNT(e.emp_id) AS n FROM dept d LEFT JOIN emp e "
                        "ON e.dept_id = d.dept_id GROUP BY d.dept_name", Q_ALL) == {}
    # every employee has a department: the INNER join keeps them all
    assert _failed(env, "SELECT e.name, d.dept_name FROM emp e JOIN dept d ON e.dept_id = d.dept_id",
                   "List all employees with their department.") == {}
    # the same INNER join, and the question does not keep every department
    assert _failed(env, "SELECT d.dept_name, COUNT(*) AS n FROM dept d JOIN emp e ON e.dept_id = d.dept_id "
                        "GROUP BY d.dept_name", "How many employees does each department have?") == {}


# -- grain vs per / for each / by -------------------------------------------------------------------

def test_grain_fires_when_the_named_entity_is_not_grouped(env: Any) -> None:
    q = "What is the total salary per department?"
    assert "grain" in _failed(env, "SELECT SUM(salary) AS total FROM emp", q)
    assert "grain" in _failed(env, "SELECT manager_id, SUM(salary) AS total FROM emp GROUP BY manager_id", q)
    assert "grain" in _failed(env, "SELECT name, SUM(salary) AS total FROM emp GROUP BY name",
                              "Total salary by hire year?")
    assert "grain" in _failed(env, "SELECT name, SUM(salary) AS total FROM emp GROUP BY name",
                              "Total salary grouped by hire year?")


def test_grain_silent_on_the_right_grouping_ratios_and_ordering(env: Any) -> None:
    assert _failed(env, "SELECT d.dept_name, SUM(e.salary) AS total FROM emp e JOIN dept d ON e.dept_id = d.dept_id "
                        "GROUP BY d.dept_name", "What is the total salary per department?") == {}
    assert _failed(env, "SELECT dept_id, SUM(salary) AS total FROM emp GROUP BY dept_id",
                   "For each department, what is the total salary?") == {}
    assert _failed(env, "SELECT COUNT(*) * 1.0 / COUNT(DISTINCT dept_id) AS ratio FROM emp",
                   "What is the average number of employees per department?") == {}
    assert _failed(env, "SELECT name, SUM(salary) AS total FROM emp GROUP BY name ORDER BY total DESC",
                   "Employees ranked by total salary") == {}
    # "by" after a participle names who, not a grain
    assert _failed(env, "SELECT d.dept_name, SUM(p.budget) AS b FROM project p JOIN emp e ON p.emp_id = e.emp_id "
                        "JOIN dept d ON e.dept_id = d.dept_id GROUP BY d.dept_name",
                   "What budget is held by the projects of each department?") == {}


# -- aggregate wording: the question names the aggregate ----------------------------------------------

def test_aggregate_wording_fires_on_the_other_aggregate(env: Any) -> None:
    name = "aggregate_wording"
    assert name in _failed(env, "SELECT dept_id, SUM(salary) AS s FROM emp GROUP BY dept_id",
                           "What is the average salary in each department?")
    assert name in _failed(env, "SELECT AVG(budget) AS b FROM project", "What is the total budget of all projects?")
    assert name in _failed(env, "SELECT MIN(salary) AS top FROM emp", "What is the highest salary?")
    assert name in _failed(env, "SELECT MAX(salary) AS low FROM emp", "What is the lowest salary?")
    assert name in _failed(env, "SELECT COUNT(manager_id) AS n FROM emp", "How many different managers are there?")


def test_aggregate_wording_silent_on_agreeing_or_unstated_aggregates(env: Any) -> None:
    assert _failed(env, "SELECT dept_id, AVG(salary) AS s FROM emp GROUP BY dept_id",
                   "What is the average salary in each department?") == {}
    assert _failed(env, "SELECT SUM(salary) / COUNT(*) AS s FROM emp", "What is the mean salary?") == {}
    assert _failed(env, "SELECT SUM(budget) AS b FROM project", "What is the total budget of all projects?") == {}
    assert _failed(env, "SELECT MAX(salary) AS top FROM emp", "What is the highest salary?") == {}
    # the direction is carried by ORDER BY, or depends on the column ("oldest"): not read
    assert _failed(env, "SELECT name, MIN(salary) AS s FROM emp GROUP BY name ORDER BY s DESC LIMIT 1",
                   "Who has the highest salary?") == {}
    assert _failed(env, "SELECT MIN(hire_year) AS y FROM emp", "When was the oldest employee hired?") == {}
    assert _failed(env, "SELECT COUNT(DISTINCT manager_id) AS n FROM emp", "How many different managers are there?") == {}
    assert _failed(env, "SELECT COUNT(*) AS n FROM (SELECT manager_id FROM emp GROUP BY manager_id) m",
                   "How many unique managers are there?") == {}
    assert _failed(env, "SELECT SUM(salary) AS s FROM emp", None) == {}


# -- the hook: verify_result sends failures back like any other check ---------------------------------

def test_verify_result_runs_the_sanity_checks_with_the_question(env: Any) -> None:
    db, index, gate = env
    contract = parse_contract({"columns": ["dept_name", "n"]}, index.qualify_schema(), db.dialect)

    def verify(sql: str, question: str | None) -> Any:
        checked = gate.check(sql)
        _, output = gate.read(checked, max_rows=100, timeout_s=10, shown=False)
        return verify_result(contract, checked.text, checked.qualified, output, db, index, 10, gate=gate,
                             question=question)

    wrong = verify("SELECT d.dept_name, COUNT(*) AS n FROM dept d JOIN emp e ON e.dept_id = d.dept_id "
                   "GROUP BY d.dept_name", Q_ALL)
    assert not wrong.passed and [c.name for c in wrong.failed()] == ["inner_join_drops"]
    right = verify("SELECT d.dept_name, COUNT(e.emp_id) AS n FROM dept d LEFT JOIN emp e ON e.dept_id = d.dept_id "
                   "GROUP BY d.dept_name", Q_ALL)
    assert right.passed, right.failed()


# -- the loop: a sanity failure goes back to the model for repair ------------------------------------

def test_loop_sends_a_grain_failure_back_to_repair(tmp_path: Path) -> None:
    from dia_assets.agents.query import InMemoryMemory, answer_question
    from dia_assets.platform.model.litellm import litellm_chat
    from tests.query_fixtures import (
        FAKE_MODEL,
        build_example_warehouse,
        call,
        last_tool_result,
        register_tools,
    )

    wh = build_example_warehouse(tmp_path / "warehouse.duckdb")

    def repair(messages: list[dict[str, Any]]) -> str:
        diagnosis = last_tool_result(messages)
        assert "grain" in diagnosis and "one row per department" in diagnosis
        return call("submit", sql="SELECT department_code, COUNT(*) AS staff_count FROM staff "
                                  "GROUP BY department_code")

    register_tools([
        call("declare_contract", kind="analytical", columns=["department_code", "staff_count"],
             granularity={"description": "department", "key_columns": ["department_code"]}),
        # grouped by role under the department's column name: every contract check passes
        call("submit", sql="SELECT role AS department_code, COUNT(*) AS staff_count FROM staff GROUP BY role"),
        repair,
    ])
    result, run = answer_question("How many staff members are there per department?", wh,
                                  chat=litellm_chat(FAKE_MODEL), memory=InMemoryMemory())
    assert result.status == "answered" and result.attempts == 2
    failed = [e for e in run.trace["events"] if e["event"] == "verification" and not e["passed"]]
    assert [c["name"] for c in failed[0]["checks"] if not c["passed"]] == ["grain"]
