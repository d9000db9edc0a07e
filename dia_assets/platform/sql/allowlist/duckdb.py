"""The gate's allow-lists for DuckDB: vetted anonymous functions, data types, system columns."""

from __future__ import annotations

from sqlglot import exp

from dia_assets.platform.sql.allowlist.common import COMMON, PORTABLE, T

ANONYMOUS: frozenset[str] = frozenset(COMMON)

TYPES: frozenset[exp.DataType.Type] = frozenset(PORTABLE | {
    T.TINYINT, T.INT128, T.UTINYINT, T.USMALLINT, T.UINT, T.UBIGINT, T.UINT128,
    T.BIGNUM, T.BIT, T.TIMETZ, T.TIMESTAMPNTZ, T.TIMESTAMPTZ, T.TIMESTAMP_S,
    T.TIMESTAMP_MS, T.TIMESTAMP_NS, T.TIME_NS, T.INTERVAL, T.UUID, T.JSON, T.ARRAY,
    T.LIST, T.STRUCT, T.MAP, T.UNION, T.ENUM,
})

SYSTEM_COLUMNS: frozenset[str] = frozenset({"rowid"})
