"""The gate's allow-lists for Spark SQL: vetted anonymous functions, data types, system columns.

Left out on purpose: `reflect`, `java_method` and `try_reflect` (call any Java static method),
`input_file_name` and the `_metadata` column (disclose storage paths), `current_catalog`,
`current_user` and the other session functions (DENIED_TYPED), and every table-valued function
but number ranges and unnesting (`read_files`, ...)."""

from __future__ import annotations

from sqlglot import exp

from dia_assets.platform.sql.allowlist.common import COMMON, PORTABLE, T

ANONYMOUS: frozenset[str] = frozenset(COMMON - {"pg_typeof", "printf", "setseed"} | {
    "date_format", "date_trunc", "trunc", "year", "quarter", "month", "day", "dayofmonth", "dayofweek",
    "dayofyear", "weekofyear", "hour", "minute", "second", "last_day", "next_day", "add_months",
    "months_between", "datediff", "date_add", "date_diff", "make_date", "make_timestamp", "to_timestamp",
    "try_to_timestamp", "unix_timestamp", "from_unixtime", "current_date", "current_timestamp",
    "nvl", "ifnull", "nullif", "coalesce", "decode", "instr", "locate", "lpad", "rpad", "left", "right",
    "concat_ws", "format_number", "format_string", "regexp_extract", "regexp_extract_all", "regexp_like",
    "rlike", "regexp_replace", "split", "substring_index", "translate", "soundex", "collect_list",
    "collect_set", "array_contains", "array_distinct", "array_join", "array_sort", "size", "sort_array",
    "percentile", "percentile_approx", "approx_count_distinct", "count_if", "try_divide", "try_add",
    "try_multiply", "try_subtract", "try_avg", "try_sum", "bround", "pmod", "positive", "negative", "log2",
    "log10", "ln", "expm1", "log1p", "signum", "rint", "hypot", "isnull", "isnotnull", "any_value",
    "first", "last", "first_value", "last_value", "median", "std", "stddev", "variance", "bool_and",
    "bool_or", "some", "any", "char_length", "character_length", "startswith", "endswith", "contains",
})

TYPES: frozenset[exp.DataType.Type] = frozenset(PORTABLE | {
    T.TINYINT, T.TIMESTAMPNTZ, T.TIMESTAMPLTZ, T.INTERVAL, T.ARRAY, T.MAP, T.STRUCT,
})

# Spark's hidden per-file column (`_metadata.file_path`, ...) discloses where the data lives
SYSTEM_COLUMNS: frozenset[str] = frozenset({"_metadata"})
