"""PostgreSQL (the embedded server, a superuser's URL) passes the warehouse conformance suite:
the agent's connection is the SELECT-only role DIA creates, never the superuser."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from tests.memory_fixtures import fresh_database_url, pg_server  # noqa: F401 - pytest fixture
from tests.platform.warehouse.conformance import BaseWarehouseSuite
from tests.query_fixtures import tiny_warehouse_sql


@pytest.fixture(scope="module")
def pg_target(pg_server: dict[str, Any]) -> Iterator[str]:  # noqa: F811
    name = f"conformance_{os.getpid()}"
    url = fresh_database_url(pg_server, name)
    with psycopg.connect(url, autocommit=True) as con:
        for stmt in tiny_warehouse_sql():
            con.execute(stmt)
        con.execute("CREATE SCHEMA staging")
        con.execute("CREATE TABLE staging.secrets AS SELECT 'TOPSECRET'::text AS secret")
    yield url
    with psycopg.connect(pg_server["server"].uri(), autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class TestPostgres(BaseWarehouseSuite):
    dialect = "postgres"
    SLOW_SQL = "SELECT COUNT(*) FROM generate_series(1, 100000000000) g"
    ESCAPES = [
        "SELECT pg_read_file('/etc/passwd')",
        "SELECT \"pg_catalog\".\"pg_read_file\"('/etc/passwd')",
        "SELECT current_setting('data_directory')",
        "SELECT * FROM pg_settings",
        "SELECT CAST(1259 AS regclass)",
        "COPY staff TO '/tmp/dia_conformance.csv'",
    ]
    CONNECTION_REFUSES = [
        "SELECT * FROM staging.secrets",
        "SELECT pg_read_file('/etc/passwd')",
        "SELECT current_setting('data_directory')",
        "CREATE ROLE dia_conformance_escape SUPERUSER",
    ]

    @pytest.fixture
    def target(self, pg_target: str) -> str:
        return pg_target

    def test_the_agent_is_the_select_only_role(self, db: Any) -> None:
        who, superuser = db.query("SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user").rows[0]
        assert who == "dia_query_reader" and superuser is False
