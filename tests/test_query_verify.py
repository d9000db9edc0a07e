"""Self-verification (DIA §3.5): every check can fail, and correct SQL of the shapes real gold
queries take (ranked aggregates, top-k, LEFT JOIN with COALESCE, windows, CTEs) passes."""

from __future__ import annotations

from typing import Any

import duckdb
import pytest

from dia_assets.agents.evaluation.gold_contract import gold_contract
from dia_assets.agents.query.contract import ContractError, parse_contract
from dia_assets.agents.query.dialects import DuckDBDatabase
from dia_assets.agents.query.schema import SchemaIndex
from dia_assets.agents.query.verify import check_fanout, verify_result
from dia_assets.contracts.query_result import FilterSpec, OutputContract
from dia_assets.platform.sql.gate import Gate

DDL = """
CREATE TABLE author (author_id INTEGER PRIMARY KEY, name VARCHAR, country VARCHAR);
CREATE TABLE paper (paper_id INTEGER PRIMARY KEY, title VARCHAR, year INTEGER, venue VARCHAR);
CREATE TABLE author_paper (author_id INTEGER, paper_id INTEGER);
CREATE TABLE dept (dept_id INTEGER PRIMARY KEY, dept_name VARCHAR);
CREATE TABLE emp (emp_id INTEGER PRIMARY KEY, dept_id INTEGER, salary DOUBLE, year INTEGER);
CREATE TABLE sale (sale_id INTEGER PRIMARY KEY, emp_id INTEGER, amount DOUBLE);
INSERT INTO author VALUES (1, 'Ada', 'UK'), (2, 'Bob', 'US'), (3, 'Cy', 'US'), (4, 'Di', 'FR');
INSERT INTO paper VALUES (10, 'p10', 2020, 'A'), (11, 'p11', 2021, 'A'), (12, 'p12', 2021, 'B'),
    (13, 'p13', 2022, 'B'), (14, 'p14', 2022, 'C');
INSERT INTO author_paper VALUES (1, 10), (1, 11), (1, 12), (1, 13), (2, 11), (2, 12), (3, 14), (4, 10);
INSERT INTO dept VALUES (1, 'Sales'), (2, 'IT'), (3, 'Legal'), (4, 'Empty');
INSERT INTO emp VALUES (1, 1, 100, 2020), (2, 1, 200, 2021), (3, 2, 300, 2021), (4, 2, 50, 2022), (5, 3, 80, 2022);
INSERT INTO sale VALUES (1, 1, 10), (2, 1, 20), (3, 2, 5), (4, 3, 7), (5, 3, 8), (6, 3, 9);
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> tuple[DuckDBDatabase, SchemaIndex, Gate]:
    path = tmp_path_factory.mktemp("verify") / "w.duckdb"
    con = duckdb.connect(str(path))
    con.execute(DDL)
    con.close()
    db = DuckDBDatabase(str(path))
    index = SchemaIndex.build(db)
    for table, key in {"author": ["author_id"], "paper": ["paper_id"], "dept": ["dept_id"],
                       "emp": ["emp_id"], "sale": ["sale_id"]}.items():
        index.tables[table].primary_key = key
    return db, index, Gate(db, index.qualify_schema())


def _verify(env: Any, contract: OutputContract | dict[str, Any], sql: str) -> dict[str, Any]:
    db, index, gate = env
    if isinstance(contract, dict):
        contract = parse_contract(contract, index.qualify_schema(), "duckdb")
    checked = gate.check(sql)
    _, output = gate.read(checked, max_rows=1000, timeout_s=10, shown=False)
    v = verify_result(contract, checked.text, checked.qualified, output, db, index, 10, gate=gate)
    return {"passed": v.passed, "failed": {c.name: c.detail for c in v.failed()}}


def _gold(env: Any, sql: str) -> dict[str, Any]:
    """The contract the question asks for, as the oracle declares it."""
    db = env[0]
    out = db.query(sql, 1000, 10)
    return gold_contract(sql, "duckdb", out.columns, not out.rows)


# -- the three gold shapes that were refused, and more shapes that must pass ---------------------

GOLD_SHAPES = {
    "ranked_aggregate_left_join": (
        "SELECT d.dept_name, SUM(e.salary) AS total, RANK() OVER (ORDER BY SUM(e.salary) DESC) AS r "
        "FROM dept d LEFT JOIN emp e ON e.dept_id = d.dept_id GROUP BY d.dept_name ORDER BY r, d.dept_name"),
    "dense_rank_coalesce_sum": (
        "SELECT d.dept_name, COALESCE(SUM(s.amount), 0) AS sold, "
        "DENSE_RANK() OVER (ORDER BY COALESCE(SUM(s.amount), 0) DESC) AS r FROM dept d "
        "LEFT JOIN emp e ON e.dept_id = d.dept_id LEFT JOIN sale s ON s.emp_id = e.emp_id "
        "GROUP BY d.dept_name ORDER BY r, d.dept_name"),
    "top1_author_three_tables": (
        "SELECT a.name, COUNT(*) AS papers FROM author a JOIN author_paper ap ON ap.author_id = a.author_id "
        "JOIN paper p ON p.paper_id = ap.paper_id GROUP BY a.name ORDER BY papers DESC LIMIT 1"),
    "top_k_with_filter": (
        "SELECT a.name, COUNT(*) AS papers FROM author a JOIN author_paper ap ON ap.author_id = a.author_id "
        "JOIN paper p ON p.paper_id = ap.paper_id WHERE p.year >= 2021 GROUP BY a.name "
        "ORDER BY papers DESC, a.name LIMIT 2"),
    "left_join_count_zero": (
        "SELECT d.dept_name, COUNT(e.emp_id) AS staff FROM dept d LEFT JOIN emp e ON e.dept_id = d.dept_id "
        "GROUP BY d.dept_name ORDER BY staff DESC, d.dept_name"),
    "window_top_per_group": (
        "SELECT dept_id, emp_id, salary FROM (SELECT dept_id, emp_id, salary, "
        "RANK() OVER (PARTITION BY dept_id ORDER BY salary DESC) AS r FROM emp) t WHERE r = 1 ORDER BY dept_id"),
    "cte_above_average": (
        "WITH avg_d AS (SELECT dept_id, AVG(salary) AS a FROM emp GROUP BY dept_id) "
        "SELECT e.emp_id, e.salary FROM emp e JOIN avg_d ON avg_d.dept_id = e.dept_id "
        "WHERE e.salary > avg_d.a ORDER BY e.emp_id"),
    "count_distinct_entity": (
        "SELECT COUNT(DISTINCT a.author_id) AS authors FROM author a JOIN author_paper ap "
        "ON ap.author_id = a.author_id JOIN paper p ON p.paper_id = ap.paper_id WHERE p.venue = 'A'"),
    "sum_of_child_per_parent": (
        "SELECT e.emp_id, SUM(s.amount) AS sold FROM emp e JOIN sale s ON s.emp_id = e.emp_id "
        "GROUP BY e.emp_id ORDER BY sold DESC"),
    "running_total": (
        "SELECT year, SUM(salary) AS paid, SUM(SUM(salary)) OVER (ORDER BY year) AS running FROM emp "
        "GROUP BY year ORDER BY year"),
    "distinct_values": (
        "SELECT DISTINCT a.country FROM author a JOIN author_paper ap ON ap.author_id = a.author_id "
        "WHERE a.country IN ('US', 'UK') ORDER BY a.country"),
}


@pytest.mark.parametrize("shape", sorted(GOLD_SHAPES))
def test_correct_sql_passes_its_own_contract(env: Any, shape: str) -> None:
    sql = GOLD_SHAPES[shape]
    result = _verify(env, _gold(env, sql), sql)
    assert result["passed"], result


# -- every check can fail ------------------------------------------------------------------------


def test_a_filter_without_a_column_is_refused_and_never_passes(env: Any) -> None:
    with pytest.raises(ContractError, match="names no column"):
        parse_contract({"columns": ["name"], "filters": [{"description": "only UK"}]},
                       env[1].qualify_schema(), "duckdb")
    contract = OutputContract(columns=["name"], filters=[FilterSpec(description="only UK")])
    result = _verify(env, contract, "SELECT name FROM author")
    assert not result["passed"] and "cannot be checked" in result["failed"]["filter:only UK"]


def test_filter_operator_and_value_are_checked(env: Any) -> None:
    contract = {"columns": ["title"], "filters": [
        {"description": "after 2020", "column": "paper.year", "op": ">", "value": 2020}]}
    assert _verify(env, contract, "SELECT title FROM paper WHERE year > 2020")["passed"]
    assert _verify(env, contract, "SELECT title FROM paper WHERE 2020 < year")["passed"]  # same filter
    wrong_op = _verify(env, contract, "SELECT title FROM paper WHERE year >= 2020")
    assert "not the declared '>'" in wrong_op["failed"]["filter:after 2020"]
    wrong_value = _verify(env, contract, "SELECT title FROM paper WHERE year > 2021")
    assert "do not use the value" in wrong_value["failed"]["filter:after 2020"]
    negated = _verify(env, contract, "SELECT title FROM paper WHERE NOT year > 2020")
    assert not negated["passed"]


def test_filter_on_the_same_column_name_of_another_table_fails(env: Any) -> None:
    contract = {"columns": ["salary"], "filters": [
        {"description": "papers of 2021", "column": "paper.year", "op": "=", "value": 2021}]}
    sql = "SELECT e.salary FROM emp e JOIN paper p ON p.paper_id = e.emp_id + 9 WHERE e.year = 2021"
    result = _verify(env, contract, sql)
    assert "no predicate on paper.year" in result["failed"]["filter:papers of 2021"]
    ok = sql.replace("e.year = 2021", "p.year = 2021")
    assert _verify(env, contract, ok)["passed"]


def test_row_limit_off_by_one_fails_both_ways(env: Any) -> None:
    base = "SELECT name FROM author ORDER BY name"
    contract = {"columns": ["name"], "order": ["name"], "limit": 2}
    assert _verify(env, contract, base + " LIMIT 2")["passed"]
    assert "keeps 3 rows" in _verify(env, contract, base + " LIMIT 3")["failed"]["row_limit"]
    assert "keeps 1 rows" in _verify(env, contract, base + " LIMIT 1")["failed"]["row_limit"]
    assert "at most 2" in _verify(env, contract, base)["failed"]["row_limit"]


def test_fanout_on_count_star_through_two_one_to_many_branches(env: Any) -> None:
    # emp -> sale and emp's dept -> other emps: COUNT(*) counts sales x colleagues
    sql = ("SELECT d.dept_name, COUNT(*) AS n FROM dept d JOIN emp e ON e.dept_id = d.dept_id "
           "JOIN sale s ON s.emp_id = e.emp_id JOIN emp c ON c.dept_id = d.dept_id GROUP BY d.dept_name")
    result = _verify(env, {"columns": ["dept_name", "n"]}, sql)
    assert "fans out" in result["failed"]["join_fanout"]


def test_fanout_on_a_sum_of_the_parent_side(env: Any) -> None:
    sql = ("SELECT d.dept_name, SUM(e.salary) AS total FROM dept d JOIN emp e ON e.dept_id = d.dept_id "
           "JOIN sale s ON s.emp_id = e.emp_id GROUP BY d.dept_name")
    result = _verify(env, {"columns": ["dept_name", "total"]}, sql)
    assert "SUM(e.salary)" in result["failed"]["join_fanout"]


def test_fanout_with_a_declared_entity_count(env: Any) -> None:
    contract = {"columns": ["authors"], "entity_key": "author.author_id"}
    bad = "SELECT COUNT(a.author_id) AS authors FROM author a JOIN author_paper ap ON ap.author_id = a.author_id"
    assert not _verify(env, contract, bad)["passed"]
    good = bad.replace("COUNT(a.author_id)", "COUNT(DISTINCT a.author_id)")
    assert _verify(env, contract, good)["passed"]


def test_fanout_is_checked_in_every_select_not_only_the_first(env: Any) -> None:
    sql = ("WITH ok AS (SELECT d.dept_id, COUNT(*) AS n FROM dept d JOIN emp e ON e.dept_id = d.dept_id "
           "GROUP BY d.dept_id), bad AS (SELECT e.dept_id, SUM(e.salary) AS total FROM emp e "
           "JOIN sale s ON s.emp_id = e.emp_id GROUP BY e.dept_id) "
           "SELECT ok.dept_id, ok.n, bad.total FROM ok JOIN bad ON bad.dept_id = ok.dept_id")
    result = _verify(env, {"columns": ["dept_id", "n", "total"]}, sql)
    assert "SUM(e.salary)" in result["failed"]["join_fanout"]


def test_a_fanout_probe_that_does_not_run_fails(env: Any) -> None:
    db, index, gate = env

    class Broken:
        dialect = "duckdb"

        def query(self, sql: str, max_rows: int = 200, timeout_s: float = 10.0) -> Any:
            if "fanout_probe" in sql:
                raise RuntimeError("probe refused")
            return db.query(sql, max_rows, timeout_s)

    import sqlglot

    tree = sqlglot.parse_one("SELECT d.dept_name, COUNT(*) AS n FROM dept d JOIN emp e ON e.dept_id = d.dept_id "
                             "GROUP BY d.dept_name", read="duckdb")
    check = check_fanout(OutputContract(columns=["dept_name", "n"]), tree, Broken(), index, 10)  # type: ignore[arg-type]
    assert not check.passed and "did not run" in check.detail


def test_granularity_order_and_empty_checks_fail(env: Any) -> None:
    keyed = {"columns": ["venue", "year"], "granularity": {"key_columns": ["venue"]}}
    assert "repeat" in _verify(env, keyed, "SELECT venue, year FROM paper")["failed"]["granularity"]
    ordered = {"columns": ["year"], "order": ["year desc"]}
    assert "not ordered" in _verify(env, ordered, "SELECT year FROM paper ORDER BY year ASC")["failed"]["ordering"]
    assert not _verify(env, {"columns": ["year"]}, "SELECT year FROM paper WHERE year > 3000")["passed"]


def test_the_oracle_is_never_refused_on_these_shapes(env: Any, tmp_path_factory: pytest.TempPathFactory) -> None:
    """End to end: each shape through `dia eval --model oracle` (the full agent path, with the
    contract the oracle reads off the gold SQL, entity key included) scores 100%."""
    import json

    from dia_assets.agents.evaluation.datasets import load_instances
    from dia_assets.agents.evaluation.runner import run_eval
    from dia_assets.agents.evaluation.solvers import AgentSolver

    db = env[0]
    folder = tmp_path_factory.mktemp("oracle")
    questions = folder / "q.jsonl"
    questions.write_text("".join(
        json.dumps({"id": shape, "question": f"Shape {shape.replace('_', ' ')}?", "gold_sql": sql,
                    "db": "w", "dialect": "duckdb"}) + "\n" for shape, sql in sorted(GOLD_SHAPES.items())))
    summary = run_eval(load_instances(questions), db.location, AgentSolver("oracle"), folder / "out",
                       workers=1, ves_iterations=0)
    assert summary["ex"] == 100.0 and summary["status_counts"] == {"answered": len(GOLD_SHAPES)}, summary
