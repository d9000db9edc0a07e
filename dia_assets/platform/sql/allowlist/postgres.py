"""The gate's allow-lists for PostgreSQL: vetted anonymous functions, data types, system columns."""

from __future__ import annotations

from sqlglot import exp

from dia_assets.platform.sql.allowlist.common import COMMON, PORTABLE, T

# pg_typeof returns a regtype: an object identifier, compared with text it looks names up
ANONYMOUS: frozenset[str] = frozenset(COMMON - {"pg_typeof"} | {
    "date_trunc", "extract", "make_date", "make_time", "to_number", "div", "scale",
    "min_scale", "trim_scale", "width_bucket", "string_to_array", "array_to_string",
    "regexp_count", "regexp_instr", "regexp_substr", "regexp_match", "overlay",
})

TYPES: frozenset[exp.DataType.Type] = frozenset(PORTABLE | {
    T.MONEY, T.BIT, T.TIMETZ, T.TIMESTAMPTZ, T.INTERVAL, T.UUID, T.JSON, T.JSONB,
    T.ARRAY, T.INT4RANGE, T.INT8RANGE, T.NUMRANGE, T.DATERANGE, T.TSRANGE,
    T.TSTZRANGE, T.INET,
})

# the table's own catalog oid (`tableoid::regclass` names it) among them
SYSTEM_COLUMNS: frozenset[str] = frozenset({"ctid", "xmin", "xmax", "cmin", "cmax", "tableoid", "oid"})
