"""Safety of agent SQL: the sqlglot checks, and the read-only connections behind them."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
import sqlglot

from dia_assets.agents.query.dialects import (
    DuckDBDatabase,
    SQLiteDatabase,
    open_database,
    transpile_all,
)
from dia_assets.agents.query.policies import (
    ForcedClarification,
    PreviousAnswer,
    ResubmissionControl,
    apply_carryover,
)
from dia_assets.platform.sql.safety import SQLRefused, check_sql, normalize_sql
from tests.query_fixtures import build_sqlite, build_tiny_duckdb

SCHEMA = {
    "staff": {"badge": "VARCHAR", "role": "VARCHAR", "department_code": "VARCHAR", "hourly_rate": "DECIMAL"},
    "departments": {"department_code": "VARCHAR", "department_name": "VARCHAR"},
}


@pytest.mark.parametrize(("sql", "signature"), [
    ("DELETE FROM staff", "write_refused"),
    ("UPDATE staff SET role = 'x'", "write_refused"),
    ("CREATE TABLE t AS SELECT 1 AS x", "write_refused"),
    ("DROP TABLE staff", "write_refused"),
    ("ATTACH '/tmp/x.duckdb' AS x", "statement_refused"),
    ("INSTALL httpfs", "statement_refused"),
    ("LOAD httpfs", "statement_refused"),
    ("COPY staff TO '/tmp/out.csv'", "statement_refused"),
    ("PRAGMA database_list", "statement_refused"),
    ("SET enable_external_access = true", "statement_refused"),
    ("SELECT * FROM read_csv('/etc/passwd')", "forbidden_function"),
    ("SELECT * FROM read_text('/etc/passwd')", "forbidden_function"),
    ("SELECT * FROM glob('/etc/*')", "forbidden_function"),
    ("SELECT * FROM '/etc/passwd'", "forbidden_table"),
    ("SELECT * FROM 'data.parquet'", "forbidden_table"),
    ("SELECT * FROM staging.staff", "forbidden_table"),
    ("SELECT * FROM rejects.staff", "forbidden_table"),
    ("SELECT * FROM other_db.main.staff", "forbidden_table"),
    ("SELECT * FROM information_schema.tables", "forbidden_table"),
    ("SELECT getenv('HOME')", "forbidden_function"),
    ("SELECT * INTO copy_of_staff FROM staff", "statement_refused"),
    ("SELECT pg_terminate_backend(1)", "forbidden_function"),
    ("SELECT * FROM pragma_database_list()", "forbidden_function"),
    ("SELECT * FROM query_table('staff')", "forbidden_function"),
    ("SELECT role FROM staff; DROP TABLE staff", "statement_count"),
    ("SELECT rol FROM staff", "unknown_column:rol"),
    ("SELECT * FROM stafff", "unknown_table:stafff"),
    ("SELEC role FROM staff", "parse_error"),
])
def test_refused_before_execution(sql: str, signature: str) -> None:
    with pytest.raises(SQLRefused) as err:
        check_sql(sql, "duckdb", SCHEMA)
    assert err.value.signature == signature


def test_unknown_column_gets_the_closest_candidates() -> None:
    with pytest.raises(SQLRefused) as err:
        check_sql("SELECT s.rate FROM staff s", "duckdb", SCHEMA)
    assert "staff.hourly_rate" in str(err.value)
    with pytest.raises(SQLRefused) as err:
        check_sql("SELECT d.department FROM departments d JOIN staff s USING (department_code)", "duckdb", SCHEMA)
    assert "departments.department_code" in str(err.value) or "departments.department_name" in str(err.value)


def test_allowed_queries_are_qualified() -> None:
    checked = check_sql(
        "WITH r AS (SELECT role, COUNT(*) AS n FROM staff GROUP BY role) SELECT role, n FROM r ORDER BY n DESC",
        "duckdb", SCHEMA)
    assert not checked.is_write and "staff.role" in checked.qualified.sql()
    assert check_sql("DELETE FROM staff WHERE role = 'x'", "duckdb", SCHEMA, allow_write=True).is_write
    check_sql("SELECT d.m FROM generate_series(DATE '2026-01-01', DATE '2026-09-01', INTERVAL 1 MONTH) AS d(m)",
              "duckdb", SCHEMA)  # date spines are pure table functions


def test_duckdb_connection_is_read_only_with_external_access_off(tmp_path: Path) -> None:
    db = DuckDBDatabase(build_tiny_duckdb(tmp_path / "w.duckdb"))
    try:
        for sql in ["DELETE FROM staff", "CREATE TABLE t (x INT)", "SELECT * FROM read_csv('/etc/passwd')",
                    f"ATTACH '{tmp_path / 'x.duckdb'}' AS x", "INSTALL httpfs",
                    "SET enable_external_access = true", f"COPY staff TO '{tmp_path / 'x.csv'}'"]:
            with pytest.raises(Exception):  # noqa: B017 - any engine error is a refusal
                db.query(sql)
        assert db.query("SELECT COUNT(*) FROM staff").rows == [(4,)]
    finally:
        db.close()
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "x.duckdb").exists()


def test_sqlite_connection_is_read_only(tmp_path: Path) -> None:
    db = SQLiteDatabase(build_sqlite(tmp_path / "w.sqlite"))
    try:
        for sql in ["DELETE FROM staff", "CREATE TABLE t (x INT)", f"ATTACH '{tmp_path / 'x.db'}' AS x",
                    "PRAGMA writable_schema = 1"]:
            with pytest.raises(sqlite3.Error):
                db.query(sql)
        assert db.query("SELECT COUNT(*) FROM staff").rows == [(4,)]
        assert [t.name for t in db.tables()] == ["departments", "shifts", "staff"]
    finally:
        db.close()


def test_row_cap_and_timeout(tmp_path: Path) -> None:
    db = open_database(build_tiny_duckdb(tmp_path / "w.duckdb"))
    try:
        out = db.query("SELECT * FROM range(1000)", max_rows=10)
        assert out.row_count == 10 and out.truncated
        from dia_assets.agents.query.dialects import QueryTimeout

        with pytest.raises(QueryTimeout):
            db.query("SELECT COUNT(*) FROM range(100000000000) a", timeout_s=0.3)
    finally:
        db.close()


def test_resubmission_normalization() -> None:
    ctl = ResubmissionControl("duckdb", window=2)
    ctl.remember("SELECT role, COUNT(*) AS n FROM staff GROUP BY role")
    assert ctl.is_repeat("select ROLE,\n count(*) as N from STAFF group by role;")
    assert not ctl.is_repeat("SELECT role, COUNT(DISTINCT badge) AS n FROM staff GROUP BY role")
    ctl.remember("SELECT 1")
    ctl.remember("SELECT 2")
    assert not ctl.is_repeat("SELECT role, COUNT(*) AS n FROM staff GROUP BY role")  # out of the window
    assert normalize_sql("select 1 ;", "duckdb") == normalize_sql("SELECT 1", "duckdb")


def test_forced_clarification_streak() -> None:
    policy = ForcedClarification(threshold=3)
    assert not policy.failure("a") and not policy.failure("a")
    assert not policy.failure("b")  # a different signature resets the streak
    assert not policy.failure("b") and policy.failure("b") and policy.must_ask
    policy.asked()
    assert not policy.must_ask and policy.streak == 0


def test_carryover_prepends_the_previous_query() -> None:
    prev = PreviousAnswer("q", "WITH x AS (SELECT role FROM staff) SELECT role, COUNT(*) AS n FROM x GROUP BY role")
    out = apply_carryover("WITH y AS (SELECT * FROM previous) SELECT * FROM y WHERE n > 1", prev, "duckdb")
    tree = sqlglot.parse_one(out, read="duckdb")
    assert [c.alias for c in tree.args["with_"].expressions] == ["previous", "y"]
    assert apply_carryover("SELECT 1", prev, "duckdb") == "SELECT 1"


def test_transpile_targets() -> None:
    sql = ("SELECT department_code, strftime(shift_date, '%Y-%m') AS month, COUNT(*) AS n FROM shifts "
           "WHERE status = 'completed' GROUP BY 1, 2 ORDER BY 1")
    out = transpile_all(sql, "duckdb", ("snowflake", "bigquery", "postgres", "sqlite"))
    assert "TO_CHAR" in out["snowflake"].upper() and "FORMAT_DATE" in out["bigquery"].upper()
    for dialect, text in out.items():
        assert sqlglot.parse_one(text, read=dialect) is not None


def test_resubmission_keeps_literal_case() -> None:
    ctl = ResubmissionControl("duckdb")
    ctl.remember("DELETE FROM shifts WHERE status = 'CANCELLED'")
    assert not ctl.is_repeat("DELETE FROM shifts WHERE status = 'cancelled'")
    assert ctl.is_repeat("delete from SHIFTS where STATUS = 'CANCELLED' -- again")


def test_contract_shorthand_is_accepted() -> None:
    from dia_assets.agents.query.contract import ContractError, parse_contract

    c = parse_contract({"kind": "analytical", "columns": [{"name": "role"}, "n"], "granularity": "one row per role",
                        "order": ["n DESC", "role"]}, SCHEMA, "duckdb")
    assert c.columns == ["role", "n"] and c.granularity.description == "one row per role"
    assert [(o.column, o.direction) for o in c.order] == [("n", "desc"), ("role", "asc")]
    # a filter with no column could never be checked: it is refused when declared
    with pytest.raises(ContractError, match="names no column"):
        parse_contract({"kind": "analytical", "columns": ["role"], "filters": ["current staff only"]},
                       SCHEMA, "duckdb")
    with pytest.raises(ContractError, match="closest: staff.hourly_rate"):
        parse_contract({"kind": "analytical", "columns": ["x"], "filters": [{"description": "d", "column": "rate"}]},
                       SCHEMA, "duckdb")
    with pytest.raises(ContractError, match="post_condition_sql"):
        parse_contract({"kind": "modification", "targets": ["staff"]}, SCHEMA, "duckdb")


def test_prompts_are_data_and_fully_filled() -> None:
    import re

    from dia_assets.agents.query.tools import AGENT_TOOLS, fill, prompts, tool_specs
    from dia_assets.platform.warehouse import REGISTRY

    p = prompts()
    specs = tool_specs((*AGENT_TOOLS, "write_lesson"))
    assert [s["function"]["name"] for s in specs] == [*AGENT_TOOLS, "write_lesson"]
    descriptions = [s["function"]["description"] for s in specs]
    assert all(descriptions) and not any("{max_rows}" in d or "{timeout_s}" in d for d in descriptions)
    assert {"duckdb", "postgres", "sqlite"} <= set(REGISTRY)
    for dialect in REGISTRY.values():  # each engine's notes are its own (platform/warehouse/<name>.py)
        assert dialect.title and dialect.prompt_notes
        system = fill(p["system"], dialect_name=dialect.title, dialect_notes=dialect.prompt_notes)
        assert not re.search(r"\{[a-z_]+\}", system)
    user = fill(p["user"], question="q", schema="s", all_tables="t", memory="", carryover="", clarifications="")
    assert not re.search(r"\{[a-z_]+\}", user)


def test_markdown_fences_are_stripped() -> None:
    from dia_assets.platform.sql.safety import clean_sql

    assert clean_sql("```sql\nSELECT 1\n```") == "SELECT 1"
    assert clean_sql("  SELECT '```' AS x ") == "SELECT '```' AS x"
