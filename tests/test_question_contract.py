"""The question contract (issue 28): the gold's shape plus only what the question's text states.
Each test fails if someone widens it (a literal, an order, a limit or an entity the text does
not state enters) or narrows the shape away."""

from __future__ import annotations

import pytest

from dia_assets.agents.evaluation.gold_contract import gold_contract
from dia_assets.agents.evaluation.question_contract import literal_stated, narrow, question_contract


def qc(sql: str, columns: list[str], question: str, evidence: str = "") -> dict:
    return question_contract(sql, "duckdb", columns, question, evidence)


def filters(contract: dict) -> list[tuple[str, str, object]]:
    return [(f["column"], f["op"], f["value"]) for f in contract["filters"]]


def test_only_literals_the_question_states_enter():
    sql = ("SELECT first_name, salary FROM employees "
           "WHERE salary > 10000 AND department_id = 50 AND job_id = 'SA_REP'")
    c = qc(sql, ["first_name", "salary"], "Which employees earn more than 10,000?")
    assert filters(c) == [("employees.salary", ">", 10000)]
    full = qc(sql, ["first_name", "salary"], "Which SA_REP employees of department 50 earn more than 10000?")
    assert sorted(filters(full)) == sorted(filters(gold_contract(sql, "duckdb", ["first_name", "salary"])))


def test_a_number_inside_another_number_is_not_stated():
    sql = "SELECT COUNT(*) AS n FROM employees WHERE department_id = 50"
    assert qc(sql, ["n"], "How many employees work in department 150?")["filters"] == []
    assert qc(sql, ["n"], "How many employees work in department 50?")["filters"]


def test_evidence_text_counts():
    sql = "SELECT COUNT(*) AS n FROM lineitem WHERE l_discount = 0.05"
    assert qc(sql, ["n"], "How many line items got the usual discount?")["filters"] == []
    assert qc(sql, ["n"], "How many line items got the usual discount?", "the usual discount is 5%")["filters"]


@pytest.mark.parametrize("value,op,text,stated", [
    ("2015-01-01", ">=", "hired in 2015", True),
    ("2015-12-31", "<=", "hired in 2015", True),
    ("1996-01-01", "<", "orders placed in 1995", True),      # the exclusive bound of "in 1995"
    ("1996-01-01", ">=", "orders placed in 1995", False),    # not an obvious rendering
    ("1995-06-01", "<", "orders placed in may 1995", True),
    ("1995-03-15", "=", "orders of march 15, 1995", True),
    ("1995-03-15", "=", "orders of march 1995", False),
    (10000, ">", "more than 10,000", True),
    (0.05, "=", "a 5% discount", True),
    (0.05, "=", "a 50% discount", False),
    ("France", "=", "customers based in france", True),
    ("France", "=", "customers based in germany", False),
    ("%green%", "like", "parts whose name mentions green", True),
])
def test_renderings(value, op, text, stated):
    assert literal_stated(value, text, op) is stated


def test_short_codes_need_their_case():
    sql = "SELECT COUNT(*) AS n FROM orders WHERE o_orderstatus = 'A'"
    assert qc(sql, ["n"], "How many orders are a problem?")["filters"] == []  # the article "a"
    assert qc(sql, ["n"], "How many orders have status A?")["filters"]


def test_order_only_when_asked_and_never_a_tie_breaker():
    sql = "SELECT c_name FROM customer WHERE c_mktsegment = 'BUILDING' ORDER BY c_name"
    assert qc(sql, ["c_name"], "Which customers are in the BUILDING segment?")["order"] == []
    assert qc(sql, ["c_name"], "Which customers are in the BUILDING segment, alphabetically?")["order"] == [
        {"column": "c_name", "direction": "asc"}]
    sql = "SELECT last_name, salary FROM employees ORDER BY salary DESC, last_name"
    c = qc(sql, ["last_name", "salary"], "Employees and salaries, highest salary first.")
    assert c["order"] == [{"column": "salary", "direction": "desc"}]
    c = qc(sql, ["last_name", "salary"], "Employees sorted by salary, highest first, then by last name.")
    assert [o["column"] for o in c["order"]] == ["salary", "last_name"]


def test_limit_only_when_stated():
    sql = "SELECT p_name, p_retailprice FROM part ORDER BY p_retailprice DESC, p_name LIMIT 5"
    cols = ["p_name", "p_retailprice"]
    unstated = qc(sql, cols, "Which parts are expensive?")
    assert "limit" not in unstated and unstated["order"] == []
    top = qc(sql, cols, "What are the 5 most expensive parts?")  # a top-k: limit and its order
    assert top["limit"] == 5 and top["order"] == [{"column": "p_retailprice", "direction": "desc"}]
    assert qc(sql, cols, "What are the five most expensive parts?")["limit"] == 5
    one = "SELECT c_name FROM customer ORDER BY c_acctbal DESC LIMIT 1"
    assert qc(one, ["c_name"], "Which customer has the highest balance?")["limit"] == 1
    assert "limit" not in qc(one, ["c_name"], "Which customer has a large balance?")


def test_null_conditions_need_the_column_and_a_cue():
    sql = "SELECT first_name FROM employees WHERE manager_id IS NULL"
    assert qc(sql, ["first_name"], "Which employees have no manager?")["filters"]
    assert qc(sql, ["first_name"], "Who is at the top of the company?")["filters"] == []
    paid = "SELECT COUNT(*) AS n FROM employees WHERE commission_pct IS NOT NULL"
    assert qc(paid, ["n"], "How many staff members earn a commission?")["filters"]  # earns one: not null
    assert qc(paid, ["n"], "How many staff members are there?")["filters"] == []


def test_flags_need_their_column_named():
    sql = "SELECT COUNT(*) AS n FROM products WHERE discontinued = 1"
    assert qc(sql, ["n"], "How many products are discontinued?")["filters"]
    assert qc(sql, ["n"], "How many products are no longer sold?")["filters"] == []
    assert qc(sql, ["n"], "How many products are not discontinued?")["filters"] == []  # says = 0


def test_entity_key_only_when_the_text_names_it():
    sql = "SELECT COUNT(DISTINCT o.o_custkey) AS n FROM orders o WHERE o.o_orderdate >= '1995-01-01'"
    assert qc(sql, ["n"], "How many customers ordered since 1995?")["entity_key"] == "orders.o_custkey"
    assert "entity_key" not in qc(sql, ["n"], "How many buyers were there since 1995?")


def test_shape_is_kept_whole():
    sql = ("SELECT n.n_name, COUNT(*) AS customers FROM customer c JOIN nation n ON c.c_nationkey = n.n_nationkey "
           "GROUP BY n.n_name")
    c = qc(sql, ["n_name", "customers"], "How many customers per nation?")
    assert c["columns"] == ["n_name", "customers"]
    assert c["granularity"]["key_columns"] == ["n_name"]


CASES = [
    ("SELECT a, COUNT(*) AS n FROM t WHERE b = 'x' AND c > 3 GROUP BY a ORDER BY n DESC, a LIMIT 3",
     ["a", "n"], "The 3 a with the most rows where b is x and c above 3, ranked"),
    ("SELECT a FROM t WHERE d BETWEEN '2020-01-01' AND '2020-12-31' AND e IS NOT NULL ORDER BY a",
     ["a"], "Which a in 2020 have an e, sorted?"),
    ("SELECT COUNT(DISTINCT t.a) AS n FROM t WHERE flag = 1", ["n"], "How many t have flag set?"),
]


@pytest.mark.parametrize("sql,columns,question", CASES)
def test_never_wider_than_the_gold_contract(sql, columns, question):
    gold = gold_contract(sql, "duckdb", columns)
    q = narrow(gold, question)
    assert q["columns"] == gold["columns"] and q["granularity"] == gold["granularity"]
    assert all(f in gold["filters"] for f in q["filters"])
    assert q["order"] == gold["order"][: len(q["order"])]
    assert q.get("limit") in (None, gold.get("limit"))
    assert q.get("entity_key") in (None, gold.get("entity_key"))
    assert set(q) <= set(gold)
