"""Read-only database connections with timeouts, for executing gold and predicted SQL.

`--db` names the databases of a question set in one of three ways:

- a file: every instance runs on it (SQLite or DuckDB, told apart by the file header);
- a folder: instance `db` ids resolve to `<dir>/<id>/<id>.sqlite` (BIRD, Spider), `<dir>/<id>.sqlite`,
  `<dir>/<id>.duckdb`, `<dir>/<id>.db` (first that exists);
- a PostgreSQL URL: `{db}` in it is replaced by the instance's db id (defog sql-eval keeps one
  database per `db_name`); without `{db}` every instance uses that one database.

Connections are the Query Generator's own (`dia_assets.platform.warehouse`): DuckDB
read-only with external access disabled, its configuration locked and memory and threads
limited, SQLite through a `mode=ro` URI with an authorizer that allows only reads,
PostgreSQL with every statement in a READ ONLY transaction with a `statement_timeout`, as
the agent's SELECT-only role. Gold and predicted SQL therefore run under exactly the
connection rules the agent's SQL runs under (the agent's own SQL also passed its gate).
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dia_assets.platform.warehouse.base import (
    Dialect,
    QueryTimeout,  # noqa: F401 - re-exported
    sniff_file,
    target_dialect,
)


@dataclass
class ResultSet:
    columns: list[str]
    rows: list[tuple[Any, ...]]
    elapsed_s: float = 0.0


# Gold and predicted results are compared whole: no row cap short of absurd.
MAX_ROWS = 10_000_000


@dataclass
class Database:
    """One open database, read-only through the Query Generator's own connections
    (same safety settings, same timeouts). Not shared between threads."""

    dialect: str
    target: str
    name: str = ""
    _db: Any = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _types: dict[str, dict[str, str]] | None = field(default=None, repr=False)

    def query(self, sql: str, timeout_s: float = 30.0) -> ResultSet:
        with self._lock:
            started = time.perf_counter()  # unrounded: VES divides these times
            out = self._db.query(sql, max_rows=MAX_ROWS, timeout_s=timeout_s)
            return ResultSet(out.columns, out.rows, time.perf_counter() - started)

    def schema(self) -> dict[str, list[str]]:
        """{table: [columns]} of the database's main schema (lower-cased names)."""
        return {t.name.lower(): [c.name.lower() for c in t.columns] for t in self._db.tables()}

    def column_types(self) -> dict[str, dict[str, str]]:
        """{table: {column: type}} of the main schema (lower-cased names, the types as the engine
        spells them), read once: a gold query's transpilation asks for it per question."""
        if self._types is None:
            with self._lock:
                self._types = {t.name.lower(): {c.name.lower(): c.type for c in t.columns} for t in self._db.tables()}
        return self._types

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._db.close()

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- opening ---------------------------------------------------------------------------------------


def sniff(path: Path) -> str:
    """The engine of a database file from its header (`Dialect.file_header`: SQLite's
    "SQLite format 3", DuckDB's "DUCK"), the target's own classification as a fallback."""
    return (sniff_file(path) or target_dialect(str(path))).name


def open_database(target: str | Path, name: str = "", catalog_reads: bool = False) -> Database:
    """Open one database read-only through the warehouse registry: a file (its engine told by
    its header) or a server URL. `catalog_reads`: an engine that can (SQLite) also admits reads
    of its own catalog tables and version (scoring a predictions file)."""
    shown = opened = str(target)
    engine: Dialect = target_dialect(shown)
    if engine.file_based:
        path = engine.local_path(shown)
        if not path.is_file():
            raise FileNotFoundError(f"no database file at {path}")
        engine = sniff_file(path, engine) or engine
        shown, opened = str(path), str(path.resolve())
    options = {"catalog_reads": True} if catalog_reads and engine.catalog_reads else {}
    return Database(engine.name, shown, name, engine.open(opened, **options))


class DatabaseResolver:
    """Maps an instance's db id to a database target, from the `--db` spec."""

    def __init__(self, spec: str | Path, catalog_reads: bool = False) -> None:
        self.spec = str(spec)
        self.catalog_reads = catalog_reads

    def target(self, db_id: str) -> str:
        spec = self.spec
        if not target_dialect(spec).file_based:
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
        return open_database(self.target(db_id), name=db_id, catalog_reads=self.catalog_reads)
