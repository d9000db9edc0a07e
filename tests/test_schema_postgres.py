"""The Schema Creator on PostgreSQL (embedded, from pgserver): same load, same checks."""

from __future__ import annotations

import os

import psycopg
import pytest

from dia_assets.agents.schema_creator import sqlgen
from dia_assets.pipeline import run
from dia_assets.platform.tables.target import transpile
from tests.memory_fixtures import fresh_database_url, pg_server  # noqa: F401  (fixture)
from tests.schema_fixtures import EXAMPLES


@pytest.fixture
def pg_url(pg_server) -> str:  # noqa: F811
    return fresh_database_url(pg_server, f"schema_{os.getpid()}")


def test_example_loads_into_postgres_accepted(tmp_path, pg_url, example_interpretation):
    assert pg_url.startswith("postgresql://")
    result = run(EXAMPLES / "data", tmp_path / "ws", warehouse=pg_url, interpretation=example_interpretation,
                 overrides_seed=EXAMPLES / "data" / "overrides.yaml")
    assert result.report.dialect == "postgres"
    assert result.report.accepted, {k: a.summary for k, a in result.report.axes.items()}
    assert "postgresql://" not in (tmp_path / "ws" / "validation" / "report.json").read_text().replace(
        "postgresql://(redacted)", "")
    with psycopg.connect(pg_url) as con:
        assert con.execute("SELECT count(*) FROM public.staff").fetchone()[0] == 400
        assert con.execute("SELECT count(*) FROM staging.staff").fetchone()[0] == 405
        assert con.execute("SELECT count(*) FROM rejects.staff").fetchone()[0] == 2
        types = dict(con.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'public' AND table_name = 'payroll'").fetchall())
        assert types["gross_pay"] == "numeric" and types["paid_on"] == "date"
        fks = con.execute("SELECT count(*) FROM information_schema.table_constraints "
                          "WHERE constraint_type = 'FOREIGN KEY' AND table_schema = 'public'").fetchone()[0]
        assert fks >= 4
        assert con.execute("SELECT sum(gross_pay) FROM payroll WHERE period = '2026-01'").fetchone()[0] > 0
    ddl = (tmp_path / "ws" / "schema" / "ddl.sql").read_text()
    assert "CREATE TABLE public.\"payroll\"" in ddl and "NUMERIC(18, 2)" in ddl.upper().replace("DECIMAL", "NUMERIC")
    # A second run replaces the tables in one transaction.
    again = run(EXAMPLES / "data", tmp_path / "ws", warehouse=pg_url, interpretation=example_interpretation)
    assert again.report.accepted


def test_ddl_transpiles_to_postgres():
    sql = transpile("CREATE TABLE t (a HUGEINT, b DOUBLE, c VARCHAR)", "postgres")
    assert "CREATE TABLE t" in sql
    assert sqlgen.pg_type("HUGEINT") == "NUMERIC(38, 0)" and sqlgen.pg_type("DOUBLE") == "DOUBLE PRECISION"
    assert sqlgen.pg_type("TIMESTAMP WITH TIME ZONE") == "TIMESTAMPTZ"
