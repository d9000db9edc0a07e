"""Warehouses the agent executes on (DuckDB default, PostgreSQL, SQLite) and the dialects it
only transpiles to (Snowflake, BigQuery).

Every `Database` opens read-only for analytical work: DuckDB with external access disabled
and its configuration locked, SQLite through a read-only URI plus an authorizer that denies
ATTACH and writes, PostgreSQL inside `SET TRANSACTION READ ONLY`. Each query runs with a
row cap and a timeout.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import sqlglot

from dia_assets.agents.locations import is_postgres

EXECUTED = ("duckdb", "postgres", "sqlite")
TRANSPILE_TARGETS = ("snowflake", "bigquery", "postgres", "sqlite", "duckdb")


class QueryTimeout(RuntimeError):
    pass


@dataclass
class QueryOutput:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    truncated: bool = False
    elapsed_s: float = 0.0

    @property
    def row_count(self) -> int:
        return len(self.rows)


@dataclass
class ColumnMeta:
    name: str
    type: str


@dataclass
class TableMeta:
    name: str
    columns: list[ColumnMeta] = field(default_factory=list)


class Database(Protocol):
    """What the agent needs from a warehouse. `dialect` is a sqlglot dialect name."""

    dialect: str
    location: str

    def query(self, sql: str, max_rows: int = 200, timeout_s: float = 10.0) -> QueryOutput: ...

    def tables(self) -> list[TableMeta]: ...

    def scratch(self) -> Database: ...

    def close(self) -> None: ...


def transpile(sql: str, read: str, write: str) -> str:
    return sqlglot.transpile(sql, read=read, write=write, pretty=True)[0]


def transpile_all(sql: str, read: str, targets: tuple[str, ...] = ("snowflake", "bigquery")) -> dict[str, str]:
    out: dict[str, str] = {}
    for target in targets:
        if target == read:
            continue
        try:
            out[target] = transpile(sql, read, target)
        except sqlglot.errors.SqlglotError as err:
            out[target] = f"-- not transpilable: {err}"
    return out


def _fetch(cursor: Any, max_rows: int) -> tuple[list[str], list[tuple[Any, ...]], bool]:
    columns = [d[0] for d in (cursor.description or [])]
    if not columns:
        return [], [], False
    rows = [tuple(r) for r in cursor.fetchmany(max_rows + 1)]
    return columns, rows[:max_rows], len(rows) > max_rows


# -- DuckDB ----------------------------------------------------------------------------------


class DuckDBDatabase:
    dialect = "duckdb"

    def __init__(self, path: str | Path, read_only: bool = True) -> None:
        import duckdb

        self.path = Path(path)
        self.location = str(self.path)
        self.read_only = read_only
        self.con = duckdb.connect(
            str(self.path), read_only=read_only,
            config={"enable_external_access": False, "lock_configuration": True},
        )

    def query(self, sql: str, max_rows: int = 200, timeout_s: float = 10.0) -> QueryOutput:
        started = time.perf_counter()
        # the connection itself, not a cursor: a DuckDB cursor is a separate connection and
        # would not see the open transaction of a modification
        cursor = self.con
        fired = threading.Event()

        def stop() -> None:
            fired.set()
            cursor.interrupt()

        timer = threading.Timer(timeout_s, stop)
        timer.start()
        try:
            cursor.execute(sql)
            columns, rows, truncated = _fetch(cursor, max_rows)
        except Exception as err:
            if fired.is_set():
                raise QueryTimeout(f"query exceeded {timeout_s:g} s and was interrupted") from err
            raise
        finally:
            timer.cancel()
        return QueryOutput(columns, rows, truncated, round(time.perf_counter() - started, 4))

    def tables(self) -> list[TableMeta]:
        rows = self.con.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'main' AND table_catalog = current_database() "
            "ORDER BY table_name, ordinal_position"
        ).fetchall()
        return _group(rows)

    def execute_script(self, statements: list[str]) -> None:
        for stmt in statements:
            self.con.execute(stmt)

    def begin(self) -> None:
        self.con.execute("BEGIN TRANSACTION")

    def commit(self) -> None:
        self.con.execute("COMMIT")

    def rollback(self) -> None:
        self.con.execute("ROLLBACK")

    def scratch(self) -> DuckDBDatabase:
        """A writable copy in a temporary folder (external access still disabled)."""
        folder = Path(tempfile.mkdtemp(prefix="dia_scratch_"))
        target = folder / self.path.name
        shutil.copy2(self.path, target)
        wal = self.path.with_name(self.path.name + ".wal")
        if wal.exists():
            shutil.copy2(wal, target.with_name(target.name + ".wal"))
        db = DuckDBDatabase(target, read_only=False)
        db._scratch_dir = folder  # type: ignore[attr-defined]
        return db

    def writable(self) -> DuckDBDatabase:
        """The real file, read-write (only for applying a verified modification)."""
        self.close()
        return DuckDBDatabase(self.path, read_only=False)

    def reopen(self) -> None:
        import duckdb

        self.close()
        self.con = duckdb.connect(
            str(self.path), read_only=self.read_only,
            config={"enable_external_access": False, "lock_configuration": True},
        )

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.con.close()
        folder = getattr(self, "_scratch_dir", None)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def _group(rows: list[tuple[Any, ...]]) -> list[TableMeta]:
    tables: dict[str, TableMeta] = {}
    for table, column, dtype in rows:
        tables.setdefault(table, TableMeta(table)).columns.append(ColumnMeta(column, str(dtype)))
    return list(tables.values())


# -- SQLite ----------------------------------------------------------------------------------

_SQLITE_DENY = {
    sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH, sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE,
    sqlite3.SQLITE_DELETE, sqlite3.SQLITE_CREATE_TABLE, sqlite3.SQLITE_DROP_TABLE,
    sqlite3.SQLITE_ALTER_TABLE, sqlite3.SQLITE_CREATE_INDEX, sqlite3.SQLITE_CREATE_VIEW,
    sqlite3.SQLITE_PRAGMA,
}


class SQLiteDatabase:
    dialect = "sqlite"

    def __init__(self, path: str | Path, read_only: bool = True) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.read_only = read_only
        uri = f"file:{self.path}?mode={'ro' if read_only else 'rw'}"
        self.con = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        self._deadline = 0.0
        self.con.set_progress_handler(self._progress, 10_000)
        if read_only:
            self.con.set_authorizer(self._authorize)

    def _authorize(self, action: int, *args: Any) -> int:
        return sqlite3.SQLITE_DENY if action in _SQLITE_DENY else sqlite3.SQLITE_OK

    def _progress(self) -> int:
        return 1 if self._deadline and time.perf_counter() > self._deadline else 0

    def query(self, sql: str, max_rows: int = 200, timeout_s: float = 10.0) -> QueryOutput:
        started = time.perf_counter()
        self._deadline = started + timeout_s
        try:
            cursor = self.con.execute(sql)
            columns, rows, truncated = _fetch(cursor, max_rows)
        except sqlite3.OperationalError as err:
            if "interrupted" in str(err):
                raise QueryTimeout(f"query exceeded {timeout_s:g} s and was interrupted") from err
            raise
        finally:
            self._deadline = 0.0
        return QueryOutput(columns, rows, truncated, round(time.perf_counter() - started, 4))

    def tables(self) -> list[TableMeta]:
        self.con.set_authorizer(None)
        try:
            names = [r[0] for r in self.con.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') "
                "AND name NOT LIKE 'sqlite_%' ORDER BY name"
            )]
            rows = [
                (name, col[1], col[2] or "TEXT")
                for name in names
                for col in self.con.execute(f'PRAGMA table_info("{name}")')
            ]
        finally:
            if self.read_only:
                self.con.set_authorizer(self._authorize)
        return _group(rows)

    def execute_script(self, statements: list[str]) -> None:
        for stmt in statements:
            self.con.execute(stmt)

    def begin(self) -> None:
        self.con.execute("BEGIN")

    def commit(self) -> None:
        self.con.execute("COMMIT")

    def rollback(self) -> None:
        self.con.execute("ROLLBACK")

    def scratch(self) -> SQLiteDatabase:
        folder = Path(tempfile.mkdtemp(prefix="dia_scratch_"))
        target = folder / self.path.name
        shutil.copy2(self.path, target)
        db = SQLiteDatabase(target, read_only=False)
        db._scratch_dir = folder  # type: ignore[attr-defined]
        return db

    def writable(self) -> SQLiteDatabase:
        return SQLiteDatabase(self.path, read_only=False)

    def reopen(self) -> None:
        pass

    def close(self) -> None:
        self.con.close()
        folder = getattr(self, "_scratch_dir", None)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


# -- PostgreSQL ------------------------------------------------------------------------------


class PostgresDatabase:
    """Every analytical query runs in its own READ ONLY transaction with a statement timeout.
    The scratch copy of a modification is a transaction that is rolled back."""

    dialect = "postgres"

    def __init__(self, conninfo: str, schema: str = "public", read_only: bool = True) -> None:
        import psycopg

        self.conninfo = conninfo
        self.location = _redact(conninfo)
        self.schema = schema
        self.read_only = read_only
        self._in_tx = False
        self.con = psycopg.connect(conninfo, autocommit=True)

    def query(self, sql: str, max_rows: int = 200, timeout_s: float = 10.0) -> QueryOutput:
        import psycopg

        started = time.perf_counter()
        try:
            if self._in_tx:  # inside a modification's transaction: see its changes
                self.con.execute("SELECT set_config('statement_timeout', %s, true)", (str(int(timeout_s * 1000)),))
                columns, rows, truncated = _fetch(self.con.execute(sql), max_rows)  # type: ignore[arg-type]
            else:
                with self.con.transaction(force_rollback=self.read_only):
                    if self.read_only:
                        self.con.execute("SET TRANSACTION READ ONLY")
                    self.con.execute(
                        "SELECT set_config('statement_timeout', %s, true)", (str(int(timeout_s * 1000)),)
                    )
                    self.con.execute(f"SET LOCAL search_path TO {self.schema}")
                    cursor = self.con.execute(sql)  # type: ignore[arg-type]
                    columns, rows, truncated = _fetch(cursor, max_rows)
        except psycopg.errors.QueryCanceled as err:
            raise QueryTimeout(f"query exceeded {timeout_s:g} s and was interrupted") from err
        return QueryOutput(columns, rows, truncated, round(time.perf_counter() - started, 4))

    def tables(self) -> list[TableMeta]:
        rows = self.con.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = %s ORDER BY table_name, ordinal_position", (self.schema,)
        ).fetchall()
        return _group(rows)

    def execute_script(self, statements: list[str]) -> None:
        for stmt in statements:
            self.con.execute(stmt)  # type: ignore[arg-type]

    def begin(self) -> None:
        self.con.execute("BEGIN")
        self._in_tx = True
        self.con.execute(f"SET LOCAL search_path TO {self.schema}")

    def commit(self) -> None:
        self._in_tx = False
        self.con.execute("COMMIT")

    def rollback(self) -> None:
        self._in_tx = False
        self.con.execute("ROLLBACK")

    def scratch(self) -> PostgresDatabase:
        """PostgreSQL runs DDL transactionally: the scratch copy is a rolled-back transaction."""
        db = PostgresDatabase(self.conninfo, self.schema, read_only=False)
        db.scratch_is_transaction = True  # type: ignore[attr-defined]
        return db

    def writable(self) -> PostgresDatabase:
        return PostgresDatabase(self.conninfo, self.schema, read_only=False)

    def reopen(self) -> None:
        pass

    def close(self) -> None:
        self.con.close()


def _redact(conninfo: str) -> str:
    text = re.sub(r"://([^:@/]+):[^@/]+@", r"://\1:***@", conninfo)
    return re.sub(r"password=\S+", "password=***", text)


def open_database(target: str | Path, read_only: bool = True) -> Database:
    """DuckDB file (default), SQLite file (`.sqlite`, `.db`, `sqlite:///path`) or a
    PostgreSQL URL (`postgresql://...`)."""
    text = str(target)
    if is_postgres(text):
        return PostgresDatabase(text, read_only=read_only)
    if text.startswith("sqlite:///"):
        return SQLiteDatabase(text.removeprefix("sqlite:///"), read_only=read_only)
    if Path(text).suffix.lower() in (".sqlite", ".sqlite3", ".db"):
        return SQLiteDatabase(text, read_only=read_only)
    if not Path(text).exists():
        raise FileNotFoundError(f"no warehouse at {text}")
    return DuckDBDatabase(text, read_only=read_only)


@contextmanager
def opened(target: str | Path) -> Iterator[Database]:
    db = open_database(target)
    try:
        yield db
    finally:
        db.close()
