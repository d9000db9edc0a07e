"""How wide a table the target can hold (`Dialect.max_columns`).

PostgreSQL refuses a table of more than 1,600 columns. A source's reject table is the widest
table it gets (every source column as text, the provenance columns and the reject reason), so a
source wider than `postgres_max_source_columns()` is refused whole on PostgreSQL, by name,
before anything is created: no table is split silently. DuckDB has no such limit (it holds the
10,000 columns `DIA_MAX_COLUMNS` lets the interpreter read)."""

from __future__ import annotations

from dia_assets.agents.schema_creator.layout import PROVENANCE, REJECT_EXTRA
from dia_assets.platform.warehouse.base import dialect_for

POSTGRES_MAX_COLUMNS = 1600  # PostgreSQL's MaxHeapAttributeNumber (its Dialect.max_columns)


def max_source_columns(max_columns: int) -> int:
    """Source columns a table may have where a table holds `max_columns`: its reject table must fit."""
    return max_columns - len(PROVENANCE) - len(REJECT_EXTRA)


def postgres_max_source_columns() -> int:
    """Source columns a table may have on PostgreSQL."""
    return max_source_columns(POSTGRES_MAX_COLUMNS)


def too_wide(dialect: str, source_columns: int) -> str | None:
    """Why a source of this many columns cannot be loaded into `dialect`, or None."""
    engine = dialect_for(dialect)
    if engine.max_columns is None or source_columns <= max_source_columns(engine.max_columns):
        return None
    most, limit = engine.max_columns, max_source_columns(engine.max_columns)
    return (f"{source_columns:,} columns: a {engine.title} table holds at most {most:,} and "
            f"the source's staging and reject tables add {most - limit} columns, so at most "
            f"{limit:,} source columns; build into DuckDB (`--warehouse FILE.duckdb`), split the file, or "
            "exclude it in the overrides")


def check_chunk() -> int:
    """Row checks (typed columns that refuse a row) per statement when a table has more than
    this many: `DIA_WIDE_CHUNK`, default 1,000. A refined CTAS carrying 7,500 checks beside
    10,000 parses peaked at 3.1 GB; the checks are made first, a chunk per statement, into a
    table of refused rows (`sqlgen.refused_rows_sql`)."""
    from dia_assets.platform.settings import get_settings

    return get_settings().wide_chunk
