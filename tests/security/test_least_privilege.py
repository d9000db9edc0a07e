"""Below the gate: what each connection refuses on its own (README, Safety)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest

from dia_assets.agents.query.dialects import (
    DuckDBDatabase,
    PostgresDatabase,
    SQLiteDatabase,
)
from tests.memory_fixtures import pg_server  # noqa: F401 - pytest fixture
from tests.security.conftest import pg  # noqa: F401 - pytest fixture
from tests.security.harness import probe, run_agent

BOMB = "SELECT length(string_agg(repeat('x', 100000), '')) AS n FROM range(100000)"  # ~10 GB


def test_duckdb_is_read_only_sandboxed_and_limited(duck: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIA_QUERY_MEMORY_LIMIT", "100MB")
    monkeypatch.setenv("DIA_QUERY_THREADS", "1")
    db = DuckDBDatabase(duck)
    try:
        limit = db.query("SELECT current_setting('memory_limit')").rows[0][0]
        assert limit.endswith("MiB") and float(limit.split()[0]) < 100
        assert db.query("SELECT current_setting('threads')").rows == [(1,)]
        assert db.query("SELECT current_setting('enable_external_access')").rows == [(False,)]
        assert db.query("SELECT current_setting('max_temp_directory_size')").rows[0][0].endswith("GiB")
        for sql in ["SET memory_limit = '10GB'", "SET enable_external_access = true", "RESET threads",
                    "DELETE FROM staff", f"SELECT * FROM read_csv('{duck.parent / 'secret.csv'}')"]:
            with pytest.raises(duckdb.Error):
                db.query(sql)
    finally:
        db.close()


def test_a_huge_string_agg_fails_cleanly(duck: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Finding 7: a 10 GB string_agg stops at the memory limit with a clear message."""
    monkeypatch.setenv("DIA_QUERY_MEMORY_LIMIT", "100MB")
    db = DuckDBDatabase(duck)
    try:
        with pytest.raises(MemoryError, match="DIA_QUERY_MEMORY_LIMIT"):
            db.query(BOMB, timeout_s=60)
    finally:
        db.close()
    out = run_agent(duck, probe(BOMB), timeout_s=60)
    assert "more memory than the agent's limit" in out.tool("probe")["result"]


def test_sqlite_authorizer_allows_only_reads(lite: Path) -> None:
    db = SQLiteDatabase(lite)
    try:
        assert db.query("SELECT COUNT(*) FROM staff").rows == [(4,)]
        for sql in ["SELECT * FROM sqlite_master", "SELECT sqlite_version()", "PRAGMA table_info(staff)",
                    f"ATTACH '{lite.parent / 'secret.db'}' AS s", "DELETE FROM staff", "CREATE TEMP TABLE t (x)"]:
            with pytest.raises(sqlite3.DatabaseError):
                db.query(sql)
        assert [t.name for t in db.tables()] == ["departments", "shifts", "staff"]
    finally:
        db.close()


def test_postgres_agent_is_a_select_only_role_never_a_superuser(pg: str) -> None:  # noqa: F811
    db = PostgresDatabase(pg)
    try:
        assert db.role == "dia_query_reader"
        who, superuser = db.query(
            "SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user").rows[0]
        assert who == "dia_query_reader" and superuser is False
        assert db.query("SELECT COUNT(*) FROM staff").rows == [(4,)]
        for sql in ["SELECT * FROM staging.secrets", "SELECT pg_read_file('/etc/passwd')",
                    "SELECT current_setting('data_directory')", "SELECT * FROM pg_ls_waldir()",
                    "DELETE FROM staff"]:
            with pytest.raises(psycopg.Error):
                db.query(sql)
    finally:
        db.close()


def test_embedded_postgres_is_private_and_socket_only(pg_server: dict[str, Any]) -> None:  # noqa: F811
    pgdata: Path = pg_server["pgdata"]
    assert pgdata.stat().st_mode & 0o777 == 0o700
    rules = [line.split() for line in (pgdata / "pg_hba.conf").read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    assert rules and all(r[0] == "local" for r in rules)
    with psycopg.connect(pg_server["server"].uri(), autocommit=True) as con:
        assert con.execute("SHOW listen_addresses").fetchone() == ("",)
        loaded = con.execute("SELECT DISTINCT type FROM pg_hba_file_rules").fetchall()
        assert loaded == [("local",)]


def test_postgres_post_condition_reads_as_the_reader_role(pg: str) -> None:  # noqa: F811
    """Under the gate, a modification's post-condition runs as the SELECT-only role too: a
    row-level-security policy shows that role one row where a superuser sees two."""
    from tests.security.harness import post_condition, run_agent

    PostgresDatabase(pg).close()  # the reader role exists
    with psycopg.connect(pg, autocommit=True) as con:
        con.execute("CREATE TABLE rls_probe AS SELECT * FROM (VALUES (1), (2)) v(x)")
        con.execute("ALTER TABLE rls_probe ENABLE ROW LEVEL SECURITY")
        con.execute("CREATE POLICY only_one ON rls_probe FOR SELECT TO dia_query_reader USING (x = 1)")
    try:
        out = run_agent(pg, post_condition(
            "SELECT COUNT(*) = 1 FROM rls_probe", "CREATE TABLE scratch_only AS SELECT 1 AS x", "scratch_only",
        ), question="Create a scratch table.")
        assert out.status == "answered", out.tool("submit")["result"]
        assert out.result.modification.scratch_passed and not out.result.modification.applied
    finally:
        with psycopg.connect(pg, autocommit=True) as con:
            con.execute("DROP TABLE rls_probe")
