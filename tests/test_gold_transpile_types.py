"""Gold SQL transpiled with the database's column types: on Spark a DATE minus a DATE is an
INTERVAL where DuckDB (and PostgreSQL) count days, so only a difference whose two sides are DATE
typed becomes DATEDIFF(end, start); the evaluation passes the schema from the database it runs on."""

from __future__ import annotations

from typing import Any

from dia_assets.agents.evaluation.databases import Database
from dia_assets.agents.evaluation.datasets import transpile_gold
from dia_assets.agents.evaluation.fidelity import run_gold
from dia_assets.agents.evaluation.models import EvalInstance
from dia_assets.agents.evaluation.runner import score_instance
from dia_assets.agents.evaluation.solvers import OracleSolver
from dia_assets.platform.warehouse.base import ColumnMeta, QueryOutput, TableMeta

# as Spark's catalog spells the types
SCHEMA = {
    "orders": {"o_orderkey": "bigint", "o_orderdate": "date", "o_placed": "timestamp", "o_totalprice": "decimal(15,2)"},
    "lineitem": {"l_orderkey": "bigint", "l_shipdate": "date", "l_shipped": "timestamp", "l_quantity": "int"},
}
JOIN = " FROM orders AS o JOIN lineitem AS l ON l.l_orderkey = o.o_orderkey"

# (DuckDB gold, Spark with the schema)
GOLDEN = [
    ("SELECT AVG(l.l_shipdate - o.o_orderdate) AS days" + JOIN,
     "SELECT AVG(CAST(DATEDIFF(l.l_shipdate, o.o_orderdate) AS DOUBLE)) AS days" + JOIN),
    # unqualified columns, the difference repeated in HAVING, ORDER BY a position: only the
    # differences change (the types are worked out on a qualified copy)
    ("SELECT o_orderkey, MAX(l_shipdate - o_orderdate) FROM orders JOIN lineitem ON l_orderkey = o_orderkey "
     "GROUP BY 1 HAVING MAX(l_shipdate - o_orderdate) > 30 ORDER BY 2 DESC",
     "SELECT o_orderkey, MAX(DATEDIFF(l_shipdate, o_orderdate)) FROM orders JOIN lineitem ON l_orderkey = o_orderkey "
     "GROUP BY 1 HAVING MAX(DATEDIFF(l_shipdate, o_orderdate)) > 30 ORDER BY 2 DESC"),
    # a DATE column out of a subquery, and a DATE literal
    ("SELECT d - DATE '1995-01-01' AS since FROM (SELECT l_shipdate AS d FROM lineitem) AS t",
     "SELECT DATEDIFF(d, CAST('1995-01-01' AS DATE)) AS since FROM (SELECT l_shipdate AS d FROM lineitem) AS t"),
    # TIMESTAMP - TIMESTAMP (an INTERVAL on both engines), numbers, DATE - INTEGER: as written
    ("SELECT l.l_shipped - o.o_placed AS waited, o.o_totalprice - l.l_quantity AS rest, "
     "l.l_shipdate - 7 AS week_before" + JOIN,
     "SELECT l.l_shipped - o.o_placed AS waited, o.o_totalprice - l.l_quantity AS rest, "
     "l.l_shipdate - 7 AS week_before" + JOIN),
]


def test_only_a_date_minus_a_date_becomes_a_day_count() -> None:
    for gold, spark in GOLDEN:
        assert transpile_gold(gold, "duckdb", "spark", SCHEMA) == spark, gold
        assert transpile_gold(gold, "duckdb", "spark", lambda: SCHEMA) == spark, gold


def test_without_the_schema_the_difference_is_carried_as_written() -> None:
    """Why the schema is needed: the SQL alone does not say which operands are dates."""
    gold, spark = GOLDEN[0]
    assert "DATEDIFF" not in transpile_gold(gold, "duckdb", "spark")
    assert transpile_gold(gold, "duckdb", "spark", {}) != spark  # columns of unknown type


def test_engines_that_need_no_types_never_ask_for_them() -> None:
    """PostgreSQL's DATE - DATE is an integer of days already; a schema function is not called."""
    def refuse() -> dict[str, dict[str, str]]:
        raise AssertionError("schema read for PostgreSQL")

    gold, _ = GOLDEN[0]
    assert transpile_gold(gold, "duckdb", "postgres", refuse) == "SELECT AVG(l.l_shipdate - o.o_orderdate) AS days" + JOIN
    assert transpile_gold(gold, "duckdb", "duckdb", refuse) == gold


class _SparkLike:
    """A connection that records what it is asked: Spark's dialect, the schema above."""

    def __init__(self) -> None:
        self.sql: list[str] = []
        self.table_reads = 0

    def query(self, sql: str, max_rows: int = 200, timeout_s: float = 10.0) -> QueryOutput:
        self.sql.append(sql)
        return QueryOutput(["days"], [(3.5,)])

    def tables(self) -> list[TableMeta]:
        self.table_reads += 1
        return [TableMeta(t.upper(), [ColumnMeta(c.upper(), ty) for c, ty in cols.items()]) for t, cols in SCHEMA.items()]

    def close(self) -> None:
        pass


def test_the_evaluation_passes_the_schema_of_the_database_it_runs_on() -> None:
    """Fidelity's run_gold, `dia eval`'s gold execution and the direct oracle all transpile with
    the database's column types, read from it once."""
    gold, spark = GOLDEN[0]
    item = EvalInstance(id="ship_delay", question="days from order to shipment", gold_sql=[gold], dialect="duckdb")
    con = _SparkLike()
    db = Database("spark", "spark://fake", _db=con)

    assert run_gold(item, db).sql == spark
    assert OracleSolver().solve(item, db).sql == spark
    record: Any = score_instance(item, db, OracleSolver(), ves_iterations=1)
    assert record.status != "broken" and record.gold[0].sql == spark
    assert con.sql and all(sql == spark for sql in con.sql), con.sql
    assert con.table_reads == 1
