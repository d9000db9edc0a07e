"""DuckDB, the default warehouse: read-only, `enable_external_access=false` (no files, network,
extensions), `lock_configuration=true` (no SET can undo that), a memory limit, a thread limit
and a bound on what spills to disk (`DIA_QUERY_MEMORY_LIMIT`, default 1GB; `DIA_QUERY_THREADS`,
default 2; `DIA_QUERY_TEMP_LIMIT`, default 2GB). A scratch copy is a copy of the file."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from dia_assets.platform.settings import get_settings
from dia_assets.platform.warehouse.base import (
    Dialect,
    QueryOutput,
    QueryTimeout,
    TableMeta,
    fetch,
    group,
    register,
)


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
            columns, rows, truncated = fetch(cursor, max_rows)
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
        return group(rows)

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




def _owner(target: str) -> Any:
    """Read-only, without the agent's sandbox (the Schema Creator reads its own build), planned
    linearly so that validating a wide table stays in memory."""
    import duckdb

    from dia_assets.platform import limits

    con = duckdb.connect(target, read_only=True)
    limits.plan_linearly(con)
    return con


def _open(target: str | Path, read_only: bool = True) -> DuckDBDatabase:
    if not Path(str(target)).exists():
        raise FileNotFoundError(f"no warehouse at {target}")
    return DuckDBDatabase(str(target), read_only=read_only)


DUCKDB = register(Dialect(
    name="duckdb", sqlglot="duckdb", claims=lambda target: True, opener=_open, owner=_owner,
    title="DuckDB", file_header=(8, b"DUCK"),
    prompt_notes=("DuckDB SQL: date_trunc('month', d), strftime(d, '%Y-%m'), EXTRACT(year FROM d), "
                  "COUNT(DISTINCT x), FILTER (WHERE ...) on aggregates, ILIKE for case-insensitive matching."),
    incremental_reload=True, transactional_ddl=True, lenient_cast=True, has_strptime=True,
    default_schema="main", asset_kinds=("duckdb", "table"), nulls_first=(False, False), dbt_adapter="duckdb",
), default=True)
