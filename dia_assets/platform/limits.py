"""Resource limits for the interpreter's DuckDB connection, set from the environment.

DIA_MEMORY_LIMIT (default 2GB): DuckDB spills to a temp folder beyond it instead of
taking the machine's memory; a query that still cannot fit fails for its file only.
DIA_MAX_COLUMNS (default 10000): wider files are refused with a message. Wide files are
profiled a chunk of columns per query (unpivoted, at most 2M values per query), so the
profile itself fits the memory limit at any width: 10,000 columns x 3 rows take about
10 s here. The hard limit is DuckDB's CSV reader, which keeps buffers per column: at
20,000 columns it runs out of 2 GB reading three rows (a clear per-file error, the other
files unaffected). Raise DIA_MAX_COLUMNS together with DIA_MEMORY_LIMIT."""

from __future__ import annotations

from pathlib import Path

import duckdb

from dia_assets.platform.settings import get_settings


def memory_limit() -> str:
    return get_settings().memory_limit


def max_columns() -> int:
    return get_settings().max_columns


def plan_linearly(con: duckdb.DuckDBPyConnection) -> None:
    """Turn off DuckDB's common-subexpression pass: its cost grows with the square of a
    statement's expressions (one parse per column over 2,000 columns: 11.8 s with it, 1.3 s
    without), and our per-column expressions share nothing across columns. On narrow loads it
    made no difference measured (8 columns x 2M rows: 3.39 s CPU either way)."""
    con.execute("SET disabled_optimizers = 'common_subexpressions'")


def configure(con: duckdb.DuckDBPyConnection, spill: Path) -> None:
    """Bound the connection's memory, give it a folder to spill to, plan linearly in columns."""
    limit = memory_limit()
    try:
        con.execute(f"SET memory_limit = '{limit.replace(chr(39), '')}'")
    except duckdb.Error as exc:
        raise ValueError(f"DIA_MEMORY_LIMIT {limit!r} is not a memory size DuckDB accepts (e.g. 2GB)") from exc
    con.execute(f"SET temp_directory = '{str(spill).replace(chr(39), chr(39) * 2)}'")
    plan_linearly(con)


def too_wide(columns: int) -> str | None:
    """The refusal message for a file with more columns than the limit, or None."""
    limit = max_columns()
    if columns <= limit:
        return None
    return (f"{columns} columns, more than the limit of {limit} (set DIA_MAX_COLUMNS to raise it, "
            "with DIA_MEMORY_LIMIT: DuckDB's CSV reader keeps buffers per column); split the file or "
            "select its columns")
