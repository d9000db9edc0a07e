"""The warehouses the agent executes on and the dialects it only transpiles to (Snowflake,
BigQuery). The connections themselves, with their least-privilege rules, live in
dia_assets/platform/warehouse/ (one module per engine); this module keeps the query agent's
names for them; transpiling is platform/sql/text.py."""

from __future__ import annotations

from dia_assets.platform.sql.text import transpile, transpile_all  # noqa: F401
from dia_assets.platform.warehouse.base import (  # noqa: F401 - the query agent's names
    REGISTRY,
    ColumnMeta,
    Connection,
    Database,
    QueryOutput,
    QueryTimeout,
    TableMeta,
    opened,
)
from dia_assets.platform.warehouse.base import connect as open_database  # noqa: F401
from dia_assets.platform.warehouse.duckdb import DuckDBDatabase, duckdb_config  # noqa: F401
from dia_assets.platform.warehouse.postgres import (  # noqa: F401
    READER_ROLE,
    PostgresDatabase,
    connect_least_privileged,
)
from dia_assets.platform.warehouse.sqlite import (  # noqa: F401
    SQLITE_MAX_LENGTH,
    SQLITE_SCHEMA_COLUMNS,
    SQLITE_SCHEMA_TABLES,
    SQLiteDatabase,
)

EXECUTED = tuple(REGISTRY)
TRANSPILE_TARGETS = ("snowflake", "bigquery", "postgres", "sqlite", "duckdb")

# Where each engine puts NULLs when an ORDER BY item says neither NULLS FIRST nor NULLS LAST,
# as (ascending, descending), declared by each dialect (Dialect.nulls_first). The installed
# engines are checked against this table by tests/test_verify_semantics.py.
NULLS_FIRST_BY_DEFAULT: dict[str, tuple[bool, bool]] = {name: d.nulls_first for name, d in REGISTRY.items()}

def nulls_first_default(dialect: str, desc: bool) -> bool:
    """Whether `dialect` sorts NULLs first for an item without NULLS FIRST/LAST."""
    asc_first, desc_first = NULLS_FIRST_BY_DEFAULT.get(dialect, NULLS_FIRST_BY_DEFAULT["postgres"])
    return desc_first if desc else asc_first
