"""Warehouses with planted secrets, one per dialect."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest

from tests.memory_fixtures import fresh_database_url, pg_server  # noqa: F401 - pytest fixture
from tests.query_fixtures import build_sqlite, build_tiny_duckdb, tiny_warehouse_sql
from tests.security.harness import SECRET_FILE_TEXT, SECRET_ROW


@pytest.fixture
def secret_file(tmp_path: Path) -> Path:
    path = tmp_path / "secret.csv"
    path.write_text(f"secret\n{SECRET_FILE_TEXT}\n")
    return path


@pytest.fixture
def duck(tmp_path: Path, secret_file: Path) -> Path:
    wh = build_tiny_duckdb(tmp_path / "w.duckdb")
    con = duckdb.connect(str(wh))
    con.execute("CREATE SCHEMA staging")
    con.execute(f"CREATE TABLE staging.secrets AS SELECT '{SECRET_ROW}' AS secret")
    con.execute("CREATE SEQUENCE seq_badges")
    con.close()
    return wh


def duck_count(path: Path, sql: str = "SELECT COUNT(*) FROM staff") -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


@pytest.fixture
def lite(tmp_path: Path, secret_file: Path) -> Path:
    wh = build_sqlite(tmp_path / "w.sqlite")
    con = sqlite3.connect(tmp_path / "secret.db")  # what an ATTACH would reach
    con.execute("CREATE TABLE secrets (secret TEXT)")
    con.execute("INSERT INTO secrets VALUES (?)", (SECRET_ROW,))
    con.commit()
    con.close()
    return wh


def lite_count(path: Path, sql: str = "SELECT COUNT(*) FROM staff") -> int:
    con = sqlite3.connect(path)
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


@pytest.fixture(scope="module")
def pg(pg_server: dict[str, Any]) -> Iterator[str]:  # noqa: F811
    url = fresh_database_url(pg_server, f"security_{os.getpid()}")
    with psycopg.connect(url, autocommit=True) as con:
        for stmt in tiny_warehouse_sql():
            con.execute(stmt)
        con.execute("CREATE SCHEMA staging")
        con.execute(f"CREATE TABLE staging.secrets AS SELECT '{SECRET_ROW}'::text AS secret")
        con.execute("CREATE SEQUENCE seq_badges")
    yield url
    with psycopg.connect(pg_server["server"].uri(), autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "security_{os.getpid()}" WITH (FORCE)')


def pg_count(url: str, sql: str = "SELECT COUNT(*) FROM staff") -> int:
    with psycopg.connect(url) as con:
        return con.execute(sql).fetchone()[0]  # type: ignore[index]
