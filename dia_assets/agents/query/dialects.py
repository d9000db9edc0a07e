"""Warehouses the agent executes on (DuckDB default, PostgreSQL, SQLite) and the dialects it
only transpiles to (Snowflake, BigQuery): one connection factory per dialect, least
privilege by construction (the gate in gate.py is the first line, these are the second).

- DuckDB: read-only, `enable_external_access=false` (no files, network, extensions),
  `lock_configuration=true` (no SET can undo that), a memory limit, a thread limit and a
  bound on what spills to disk (`DIA_QUERY_MEMORY_LIMIT`, default 1GB; `DIA_QUERY_THREADS`,
  default 2; `DIA_QUERY_TEMP_LIMIT`, default 2GB).
- SQLite: a `mode=ro` URI and an authorizer that allows only reads (SELECT, reading
  columns of the database's own tables, functions other than file/extension ones), and
  no string or blob longer than 50 MB.
- PostgreSQL: every query in a READ ONLY transaction with a `statement_timeout`, as a role
  created for the agent with SELECT on the refined schema only (`DIA_QUERY_PG_ROLE`,
  default `dia_query_reader`) whenever the given URL is a superuser's, the embedded
  default included; never as a superuser.

Each query runs with a row cap and a timeout.
"""

from __future__ import annotations

import contextlib
import logging
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
from dia_assets.platform.settings import get_settings

_log = logging.getLogger(__name__)
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


# Where each engine puts NULLs when an ORDER BY item says neither NULLS FIRST nor NULLS LAST,
# as (ascending, descending): DuckDB (since 0.8, setting default_null_order) last both ways,
# PostgreSQL treats NULL as the largest value, SQLite as the smallest. The installed engines
# are checked against this table by tests/test_verify_semantics.py.
NULLS_FIRST_BY_DEFAULT: dict[str, tuple[bool, bool]] = {
    "duckdb": (False, False), "postgres": (False, True), "sqlite": (True, False),
}


def nulls_first_default(dialect: str, desc: bool) -> bool:
    """Whether `dialect` sorts NULLs first for an item without NULLS FIRST/LAST."""
    asc_first, desc_first = NULLS_FIRST_BY_DEFAULT.get(dialect, NULLS_FIRST_BY_DEFAULT["postgres"])
    return desc_first if desc else asc_first


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


def duckdb_config() -> dict[str, Any]:
    """Sandbox and resource limits of every DuckDB connection the agent uses."""
    settings = get_settings()
    return {
        "enable_external_access": False,
        "memory_limit": settings.query_memory_limit,
        "threads": settings.query_threads,
        # what spills past the memory limit is bounded too (a disk bomb instead of a RAM bomb)
        "max_temp_directory_size": settings.query_temp_limit,
        "lock_configuration": True,
    }


def _memory_error(err: Exception) -> Exception | None:
    text = str(err)
    if "Out of Memory" in text or "memory limit" in text.lower():
        return MemoryError(
            f"the query needs more memory than the agent's limit ({duckdb_config()['memory_limit']}, "
            "DIA_QUERY_MEMORY_LIMIT): aggregate or filter before building large values"
        )
    return None


class DuckDBDatabase:
    dialect = "duckdb"

    def __init__(self, path: str | Path, read_only: bool = True) -> None:
        import duckdb

        self.path = Path(path)
        self.location = str(self.path)
        self.read_only = read_only
        self.con = duckdb.connect(str(self.path), read_only=read_only, config=duckdb_config())

    @classmethod
    def from_connection(cls, con: Any, location: str = "duckdb connection") -> DuckDBDatabase:
        """Wrap a connection the caller owns (and configured): closing leaves it open."""
        db = cls.__new__(cls)
        db.path, db.location, db.read_only, db.con = Path(location), location, True, con
        db._borrowed = True  # type: ignore[attr-defined]
        return db

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
            memory = _memory_error(err)
            if memory is not None:
                raise memory from err
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
        self.con = duckdb.connect(str(self.path), read_only=self.read_only, config=duckdb_config())

    def close(self) -> None:
        if getattr(self, "_borrowed", False):
            return
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

SQLITE_MAX_LENGTH = 50_000_000
# The authorizer allows these actions and nothing else: reads only.
_SQLITE_ALLOW = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION,
                 getattr(sqlite3, "SQLITE_RECURSIVE", 33)}
_SQLITE_DENIED_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer",
                            "sqlite_version", "sqlite_source_id", "sqlite_compileoption_get",
                            "sqlite_compileoption_used", "sqlite_offset"}
# SQLite's schema tables: what `catalog_reads` admits (with the engine's version). They hold
# the CREATE statements of the file's own tables, which a scorer's prompt shows anyway.
SQLITE_SCHEMA_TABLES = ("sqlite_master", "sqlite_schema", "sqlite_temp_master", "sqlite_temp_schema")
SQLITE_SCHEMA_COLUMNS = {"type": "TEXT", "name": "TEXT", "tbl_name": "TEXT", "rootpage": "INTEGER", "sql": "TEXT"}
_SQLITE_CATALOG_FUNCTIONS = {"sqlite_version"}


class SQLiteDatabase:
    """Read-only by default (a `mode=ro` URI and an allow-list authorizer). `catalog_reads`
    (scoring other systems' SQL as BIRD's scorer runs it) also lets SELECT read SQLite's own
    tables (`sqlite_master`, `sqlite_sequence`, `sqlite_stat1`, ...) and call
    `sqlite_version()`; every other rule, and the read-only connection, stay."""

    dialect = "sqlite"

    def __init__(self, path: str | Path, read_only: bool = True, catalog_reads: bool = False) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.read_only = read_only
        self.catalog_reads = catalog_reads
        uri = f"file:{self.path}?mode={'ro' if read_only else 'rw'}"
        self.con = sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None)
        self._deadline = 0.0
        self.con.set_progress_handler(self._progress, 10_000)
        # no single string or blob beyond 50 MB: a value bomb fails instead of eating RAM
        self.con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQLITE_MAX_LENGTH)
        if read_only:
            self.con.set_authorizer(self._authorize)

    def _authorize(self, action: int, arg1: Any = None, arg2: Any = None, *args: Any) -> int:
        """An allow-list: SELECT, reading the database's own tables, harmless functions."""
        if action not in _SQLITE_ALLOW:
            return sqlite3.SQLITE_DENY
        if action == sqlite3.SQLITE_READ and str(arg1 or "").lower().startswith("sqlite_"):
            return sqlite3.SQLITE_OK if self.catalog_reads else sqlite3.SQLITE_DENY  # the catalog
        if action == sqlite3.SQLITE_FUNCTION and str(arg2 or "").lower() in _SQLITE_DENIED_FUNCTIONS:
            if self.catalog_reads and str(arg2).lower() in _SQLITE_CATALOG_FUNCTIONS:
                return sqlite3.SQLITE_OK
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

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

    def catalog_tables(self) -> list[TableMeta]:
        """SQLite's own tables in this file (schema tables always; `sqlite_sequence` and
        `sqlite_stat*` when present), for a gate that admits catalog reads."""
        meta = [TableMeta(name, [ColumnMeta(c, t) for c, t in SQLITE_SCHEMA_COLUMNS.items()])
                for name in SQLITE_SCHEMA_TABLES]
        self.con.set_authorizer(None)
        try:
            names = [r[0] for r in self.con.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'sqlite\\_%' ESCAPE '\\'")]
            rows = [(name, col[1], col[2] or "TEXT") for name in names
                    for col in self.con.execute(f'PRAGMA table_info("{name}")')]
        finally:
            if self.read_only:
                self.con.set_authorizer(self._authorize)
        return meta + _group(rows)

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
        self.role = ""
        self.reader = ""  # the role DIA created for reads, when the URL was a superuser's
        if read_only:
            self.con, self.role = connect_least_privileged(conninfo, schema)
            self.reader = self.role if self.role == get_settings().query_pg_role else ""
        else:
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

    @contextmanager
    def reading_as(self, role: str) -> Iterator[None]:
        """Inside a modification's transaction, run the next reads as the read-only role
        (which is granted SELECT on what the statements just created)."""
        if not role or not self._in_tx:
            yield
            return
        from psycopg import sql

        ident = sql.Identifier(role)
        self.con.execute(sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(
            sql.Identifier(self.schema), ident))
        self.con.execute(sql.SQL("SET LOCAL ROLE {}").format(ident))
        try:
            yield
        finally:
            with contextlib.suppress(Exception):  # an aborted transaction is rolled back anyway
                self.con.execute("RESET ROLE")

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


READER_ROLE = "dia_query_reader"


def connect_least_privileged(conninfo: str, schema: str = "public") -> tuple[Any, str]:
    """A connection that can only read the refined schema. A superuser's URL creates and
    refreshes the agent's own role, then logs in as it; any other URL is used as given, and
    must already be a SELECT-only role (README, Safety)."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import make_conninfo

    role = get_settings().query_pg_role
    with psycopg.connect(conninfo, autocommit=True) as admin:
        row = admin.execute(
            "SELECT rolsuper, current_user FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        superuser, user = row if row else (False, "")
        if not superuser:
            return psycopg.connect(conninfo, autocommit=True), str(user)
        ident = sql.Identifier(role)
        db = admin.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
        statements = [
            sql.SQL("ALTER ROLE {} NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS "
                    "NOINHERIT").format(ident),
            sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(sql.Identifier(db), ident),
            sql.SQL("GRANT USAGE ON SCHEMA {} TO {}").format(sql.Identifier(schema), ident),
            sql.SQL("GRANT SELECT ON ALL TABLES IN SCHEMA {} TO {}").format(sql.Identifier(schema), ident),
        ]
        for attempt in range(5):  # concurrent openers may collide on the catalog rows
            try:
                if admin.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).fetchone() is None:
                    admin.execute(sql.SQL("CREATE ROLE {} LOGIN").format(ident))
                for stmt in statements:
                    admin.execute(stmt)
                break
            except psycopg.errors.DatabaseError:
                if attempt == 4:
                    raise
                time.sleep(0.05 * (attempt + 1))
    try:
        con = psycopg.connect(make_conninfo(conninfo, user=role, password=""), autocommit=True)
    except psycopg.OperationalError as err:
        raise PermissionError(
            f"could not log in as the agent's read-only role {role!r} ({err}); the warehouse URL "
            "is a superuser's, which the agent never uses: give it a URL for a role with SELECT "
            "on the refined schema only"
        ) from err
    return con, role


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
