"""SQLite: a `mode=ro` URI and an authorizer that allows only reads (SELECT, reading columns of
the database's own tables, functions other than file/extension ones), and no string or blob
longer than 50 MB. The Schema Creator does not build SQLite; the agents read it."""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from dia_assets.platform.warehouse.base import (
    ColumnMeta,
    Dialect,
    QueryOutput,
    QueryTimeout,
    TableMeta,
    fetch,
    group,
    register,
)

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
            columns, rows, truncated = fetch(cursor, max_rows)
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
        return group(rows)

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
        return meta + group(rows)

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



SUFFIXES = (".sqlite", ".sqlite3", ".db")


def _claims(target: str) -> bool:
    return target.startswith("sqlite:///") or Path(target).suffix.lower() in SUFFIXES


def _open(target: str | Path, read_only: bool = True, **options: Any) -> SQLiteDatabase:
    return SQLiteDatabase(str(target).removeprefix("sqlite:///"), read_only=read_only, **options)


SQLITE = register(Dialect(
    name="sqlite", sqlglot="sqlite", claims=_claims, opener=_open, schema_creator_builds=False,
    title="SQLite", local_path=lambda target: Path(target.removeprefix("sqlite:///")),
    file_header=(0, b"SQLite format 3"), catalog_reads=True,
    prompt_notes=("SQLite SQL: strftime('%Y-%m', d) for months, dates are TEXT in ISO format, integer "
                  "division truncates: multiply by 1.0 for ratios; no FULL OUTER JOIN before 3.39."),
    transactional_ddl=True, lenient_cast=True, has_strptime=False, default_schema="main",
    asset_kinds=("sqlite", "table"), nulls_first=(True, False),
))
