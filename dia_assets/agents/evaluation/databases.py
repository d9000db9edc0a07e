"""Read-only database connections with timeouts, for executing gold and predicted SQL.

`--db` names the databases of a question set in one of three ways:

- a file: every instance runs on it (SQLite or DuckDB, told apart by the file header);
- a folder: instance `db` ids resolve to `<dir>/<id>/<id>.sqlite` (BIRD, Spider), `<dir>/<id>.sqlite`,
  `<dir>/<id>.duckdb`, `<dir>/<id>.db` (first that exists);
- a PostgreSQL URL: `{db}` in it is replaced by the instance's db id (defog sql-eval keeps one
  database per `db_name`); without `{db}` every instance uses that one database.

DuckDB opens read-only with external access disabled and its configuration locked: the same
configuration as the Query Generator's connection, so both may be open on one file at once.
SQLite opens through a `mode=ro` URI with `query_only`; PostgreSQL runs every statement in a
READ ONLY transaction with a `statement_timeout`.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DUCKDB_CONFIG = {"enable_external_access": False, "lock_configuration": True}


class QueryTimeout(RuntimeError):
    """The statement ran longer than its timeout and was interrupted."""


@dataclass
class ResultSet:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    elapsed_s: float = 0.0


@dataclass
class Database:
    """One open database. Not shared between threads: each worker opens its own."""

    dialect: str
    target: str
    name: str = ""
    _con: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def query(self, sql: str, timeout_s: float = 30.0) -> ResultSet:
        with self._lock:
            return _QUERY[self.dialect](self, sql, timeout_s)

    def schema(self) -> dict[str, list[str]]:
        """{table: [columns]} of the database's main schema (lower-cased names)."""
        if self.dialect == "sqlite":
            names = [r[0] for r in self._con.execute(
                "SELECT name FROM sqlite_master WHERE type IN ('table','view') AND name NOT LIKE 'sqlite_%'")]
            out: dict[str, list[str]] = {}
            for n in names:
                out[n.lower()] = [c[1].lower() for c in self._con.execute(f'PRAGMA table_info("{n}")')]
            return out
        sql = ("SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = "
               + ("'main'" if self.dialect == "duckdb" else "current_schema()")
               + " ORDER BY table_name, ordinal_position")
        out = {}
        for table, column in self.query(sql, 30.0).rows:
            out.setdefault(str(table).lower(), []).append(str(column).lower())
        return out

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._con.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- per-engine execution ------------------------------------------------------------------------


def _duckdb_query(db: Database, sql: str, timeout_s: float) -> ResultSet:
    cursor = db._con.cursor()
    fired = threading.Event()

    def stop() -> None:
        fired.set()
        cursor.interrupt()

    timer = threading.Timer(timeout_s, stop)
    started = time.perf_counter()
    timer.start()
    try:
        cursor.execute(sql)
        columns = [d[0] for d in (cursor.description or [])]
        rows = [tuple(r) for r in cursor.fetchall()] if columns else []
    except Exception as err:
        if fired.is_set():
            raise QueryTimeout(f"query exceeded {timeout_s:g} s") from err
        raise
    finally:
        timer.cancel()
        cursor.close()
    return ResultSet(columns, rows, time.perf_counter() - started)


def _sqlite_query(db: Database, sql: str, timeout_s: float) -> ResultSet:
    deadline = time.perf_counter() + timeout_s
    db._con.set_progress_handler(lambda: 1 if time.perf_counter() > deadline else 0, 1000)
    started = time.perf_counter()
    try:
        cursor = db._con.execute(sql)
        columns = [d[0] for d in (cursor.description or [])]
        rows = [tuple(r) for r in cursor.fetchall()] if columns else []
    except sqlite3.OperationalError as err:
        if "interrupted" in str(err):
            raise QueryTimeout(f"query exceeded {timeout_s:g} s") from err
        raise
    finally:
        db._con.set_progress_handler(None, 0)
    return ResultSet(columns, rows, time.perf_counter() - started)


def _postgres_query(db: Database, sql: str, timeout_s: float) -> ResultSet:
    import psycopg

    con = db._con
    started = time.perf_counter()
    try:
        with con.transaction(force_rollback=True):
            con.execute("SET TRANSACTION READ ONLY")
            con.execute("SELECT set_config('statement_timeout', %s, true)", (str(int(timeout_s * 1000)),))
            cursor = con.execute(sql)  # type: ignore[arg-type]
            columns = [d[0] for d in (cursor.description or [])]
            rows = [tuple(r) for r in cursor.fetchall()] if columns else []
    except psycopg.errors.QueryCanceled as err:
        raise QueryTimeout(f"query exceeded {timeout_s:g} s") from err
    return ResultSet(columns, rows, time.perf_counter() - started)


_QUERY = {"duckdb": _duckdb_query, "sqlite": _sqlite_query, "postgres": _postgres_query}


# -- opening ---------------------------------------------------------------------------------------


def sniff(path: Path) -> str:
    """'sqlite' or 'duckdb' from the file header (suffix as a fallback)."""
    try:
        with path.open("rb") as fh:
            head = fh.read(16)
    except OSError:
        head = b""
    if head.startswith(b"SQLite format 3"):
        return "sqlite"
    if head[8:12] == b"DUCK":
        return "duckdb"
    return "sqlite" if path.suffix.lower() in (".sqlite", ".sqlite3", ".db") else "duckdb"


def open_database(target: str | Path, name: str = "") -> Database:
    """Open one database read-only: a SQLite/DuckDB file or a PostgreSQL URL."""
    text = str(target)
    if text.startswith(("postgresql://", "postgres://")):
        import psycopg

        con = psycopg.connect(text, autocommit=True)
        return Database("postgres", text, name, con)
    path = Path(text.removeprefix("sqlite:///"))
    if not path.is_file():
        raise FileNotFoundError(f"no database file at {path}")
    if sniff(path) == "sqlite":
        con = sqlite3.connect(f"file:{path.resolve()}?mode=ro", uri=True, check_same_thread=False)
        con.execute("PRAGMA query_only = ON")
        return Database("sqlite", str(path), name, con)
    import duckdb

    con = duckdb.connect(str(path), read_only=True, config=dict(DUCKDB_CONFIG))
    return Database("duckdb", str(path), name, con)


class DatabaseResolver:
    """Maps an instance's db id to a database target, from the `--db` spec."""

    def __init__(self, spec: str | Path) -> None:
        self.spec = str(spec)

    def target(self, db_id: str) -> str:
        spec = self.spec
        if spec.startswith(("postgresql://", "postgres://")):
            return spec.replace("{db}", db_id) if "{db}" in spec else spec
        path = Path(spec)
        if path.is_file():
            return str(path)
        if path.is_dir():
            if not db_id:
                raise FileNotFoundError(f"{path} is a folder but the instance names no database")
            for candidate in (path / db_id / f"{db_id}.sqlite", path / f"{db_id}.sqlite",
                              path / f"{db_id}.duckdb", path / f"{db_id}.db",
                              path / db_id / f"{db_id}.duckdb", path / f"{db_id}.sqlite3"):
                if candidate.is_file():
                    return str(candidate)
            raise FileNotFoundError(f"no database for {db_id!r} under {path}")
        raise FileNotFoundError(f"--db {spec}: no such file or folder (or a postgresql:// URL)")

    def open(self, db_id: str) -> Database:
        return open_database(self.target(db_id), name=db_id)
