"""Database fingerprints: the `scope` of session lessons.

A fingerprint hashes the schema (tables, columns, types), not the data: the same database
keeps its scope when rows change, and probes catch what the data changes break.
`file_identity` tells which version of a warehouse file is in place, without reading it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

_COLUMNS_SQL = """
SELECT table_schema, table_name, column_name, data_type
FROM information_schema.columns
WHERE table_catalog = current_database()
  AND table_schema NOT IN ('information_schema', 'pg_catalog')
"""


def fingerprint_from_columns(columns: Iterable[tuple[Any, Any, Any, Any]]) -> str:
    """Stable id from (schema, table, column, type) rows, in any order and any name case."""
    lines = sorted({"\t".join(str(part).strip().lower() for part in row) for row in columns})
    digest = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    return f"db-{digest[:16]}"


# Fingerprints of DuckDB files by the file's and its write-ahead log's identity and state: one
# answer asked for its warehouse's fingerprint 3-4 times (memory scope, catalog nodes, catalog
# linker), each opening the file and reading information_schema (0.3 s each under load; issue
# 31). A file written since (a new build is a new file; DDL changes the file or its .wal) has
# another key and is read again.
_FILE_MEMO: dict[tuple[Any, ...], str] = {}


def _file_state(path: Path) -> tuple[Any, ...] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_dev, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _files_key(path: Path) -> tuple[Any, ...]:
    """The file's and its write-ahead log's state: what the memo is keyed by."""
    return (str(path), _file_state(path), _file_state(path.with_name(path.name + ".wal")))


def database_fingerprint(source: str | Path | Any) -> str:
    """Fingerprint of a DuckDB file path, or of any DB-API connection with information_schema."""
    if isinstance(source, str | Path):
        import duckdb

        path = Path(source).resolve()
        key = _files_key(path)
        state = key[1]
        if state is not None and key in _FILE_MEMO:
            return _FILE_MEMO[key]
        con = duckdb.connect(str(source), read_only=True)
        try:
            found = fingerprint_from_columns(con.execute(_COLUMNS_SQL).fetchall())
        finally:
            con.close()
        if state is not None and key == _files_key(path):
            if len(_FILE_MEMO) > 256:
                _FILE_MEMO.clear()
            _FILE_MEMO[key] = found  # unchanged while it was read
        return found
    return fingerprint_from_columns(source.execute(_COLUMNS_SQL).fetchall())


def file_identity(path: Path) -> str:
    """Which version of the file this is, without reading it: inode, size and modification
    time. Every build is a new file renamed into place (a new inode), so a report can tell
    cheaply, in each check process, whether it still describes the file in place."""
    st = path.stat()
    return f"{st.st_ino}-{st.st_size}-{st.st_mtime_ns}"
