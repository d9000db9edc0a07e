"""Database fingerprints: the `scope` of session lessons.

A fingerprint hashes the schema (tables, columns, types), not the data: the same database
keeps its scope when rows change, and probes catch what the data changes break.
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


def database_fingerprint(source: str | Path | Any) -> str:
    """Fingerprint of a DuckDB file path, or of any DB-API connection with information_schema."""
    if isinstance(source, str | Path):
        import duckdb

        con = duckdb.connect(str(source), read_only=True)
        try:
            return fingerprint_from_columns(con.execute(_COLUMNS_SQL).fetchall())
        finally:
            con.close()
    return fingerprint_from_columns(source.execute(_COLUMNS_SQL).fetchall())
