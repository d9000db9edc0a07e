"""What model-written SQL may call and cast to, in every dialect: the parts of the gate's
allow-lists the dialects share (DESIGN §8). Each dialect's own lists are in its module here
(`duckdb.py`, `postgres.py`, `sqlite.py`); a dialect without one is refused (`__init__.py`).

sqlglot parses the functions it knows into typed classes (`exp.Upper`, `exp.Count`, ...);
those are allowed unless listed in `DENIED_TYPED` (they reach outside the data: files,
settings, the session, the server). Everything sqlglot does not know becomes
`exp.Anonymous`, and is allowed only when its normalised name is in `ANONYMOUS` of the
dialect's module: pure functions over values, vetted one by one. A function not on either list is
refused, so a new engine function is unavailable until someone vets it.

Data types follow the same rule strictly: a cast, a typed literal or a column definition may
name only a type in `TYPES` of the dialect's module (numbers, text, booleans, dates and times,
intervals, JSON, UUID and containers of those). Everything else is refused, above all
PostgreSQL's object-identifier types (`oid`, `regclass`, `regnamespace`, `regrole`, ... which
turn numbers or names into catalog lookups), pseudo-types and user-defined types.
"""

from __future__ import annotations

from sqlglot import exp

# Typed classes that disclose the environment or read/write outside the warehouse.
DENIED_TYPED: frozenset[type[exp.Expression]] = frozenset(
    cls for cls in (
        getattr(exp, name, None) for name in (
            "ReadCSV", "ReadParquet", "Secret", "ToFile", "Host", "GenerateTable",
            "SessionUser", "CurrentUser", "CurrentUserId", "CurrentRole", "CurrentRoleType",
            "CurrentAvailableRoles", "CurrentSecondaryRoles", "CurrentSchema", "CurrentSchemas",
            "CurrentCatalog", "CurrentDatabase", "CurrentVersion", "CurrentSession",
            "CurrentStatement", "CurrentTransaction", "CurrentClient", "CurrentIpAddress",
            "CurrentAccount", "CurrentAccountName", "CurrentOrganizationName",
            "CurrentOrganizationUser", "CurrentRegion", "CurrentWarehouse", "CurrentTimezone",
            "XMLTable",
        )
    ) if cls is not None
)

# Table-valued functions allowed in FROM: number and date spines, and unnesting a value.
TABLE_FUNCTIONS: tuple[type[exp.Expression], ...] = (exp.GenerateSeries, exp.Unnest, exp.Explode)
ANONYMOUS_TABLE_FUNCTIONS = frozenset({"range", "generate_series", "unnest"})

COMMON = {
    # numbers
    "abs", "cbrt", "degrees", "radians", "pi", "sin", "cos", "tan", "asin", "acos", "atan",
    "atan2", "cot", "gcd", "lcm", "even", "factorial", "bit_count", "round_even", "trunc",
    "isfinite", "isinf", "isnan", "width_bucket", "sign", "random", "setseed",
    # text
    "btrim", "octet_length", "bit_length", "prefix", "suffix", "printf", "format", "initcap",
    "ilike", "strpos", "lcase", "ucase", "split_part", "regexp_split_to_array", "to_hex",
    "md5", "sha1", "sha256", "hash", "nfc_normalize", "strip_accents", "levenshtein",
    "damerau_levenshtein", "jaccard", "jaro_similarity", "jaro_winkler_similarity",
    "hamming", "mismatches", "editdist3", "chr", "ascii", "unicode", "quote_ident",
    "quote_literal", "format_bytes", "bar",
    # dates and times
    "age", "date_part", "datepart", "date_sub", "datesub", "dateadd", "isoyear", "yearweek",
    "julianday", "unixepoch", "now", "timezone", "to_date", "try_strptime", "to_days",
    "to_hours", "to_minutes", "to_months", "to_seconds", "to_years", "to_weeks",
    "to_milliseconds", "to_microseconds", "make_interval", "justify_days", "justify_hours",
    "justify_interval", "date_bin", "time_bucket", "isodow", "era", "century", "decade",
    "millennium", "microsecond", "millisecond", "nanosecond", "epoch_ms", "epoch_us",
    "epoch_ns", "dayname", "monthname", "weekday", "yearday", "strftime", "localtime",
    "localtimestamp", "clock_timestamp", "statement_timestamp", "transaction_timestamp",
    "to_timestamp", "make_timestamptz", "date", "time", "datetime",
    # aggregates and windows
    "entropy", "every", "favg", "fsum", "sumkahan", "kahan_sum", "mad", "product", "total",
    "histogram", "bit_and", "bit_or", "bit_xor", "bool_and", "bool_or", "regr_count",
    "regr_avgx", "regr_avgy", "regr_intercept", "regr_r2", "regr_slope", "regr_sxx",
    "regr_sxy", "regr_syy", "kurtosis", "kurtosis_pop", "skewness", "arbitrary",
    "reservoir_quantile", "approx_quantile", "quantile", "mode", "string_agg",
    "percent_rank", "cume_dist", "ntile", "nth_value", "group_concat",
    # lists, structs, maps, json values (no paths on disk)
    "cardinality", "list_aggregate", "list_extract", "list_element", "list_transform",
    "list_filter", "list_reduce", "list_sum", "list_avg", "list_min", "list_max",
    "list_count", "list_reverse", "list_slice", "list_cosine_similarity", "list_dot_product",
    "array_length", "array_upper", "array_lower", "array_dims", "array_cat", "array_remove",
    "array_replace", "array_positions", "array_ndims", "row", "struct_extract",
    "struct_insert", "map_extract", "map_keys", "map_values", "element_at", "to_json",
    "json_valid", "json_array_length", "json_keys", "json_structure", "json_contains",
    "json_quote", "json_group_array", "json_group_object", "jsonb_array_length",
    "jsonb_typeof", "json_typeof", "jsonb_build_object", "json_build_object",
    "jsonb_build_array", "json_build_array", "json_each_text", "json_extract_scalar",
    # conditionals and types
    "iff", "if", "iif", "nvl2", "typeof", "pg_typeof", "try", "num_nulls", "num_nonnulls",
}

T = exp.DataType.Type
PORTABLE = {
    T.SMALLINT, T.INT, T.BIGINT, T.DECIMAL, T.FLOAT, T.DOUBLE, T.VARCHAR, T.CHAR,
    T.NCHAR, T.NVARCHAR, T.TEXT, T.BPCHAR, T.BOOLEAN, T.DATE, T.TIME, T.TIMESTAMP,
    T.DATETIME, T.VARBINARY, T.BINARY, T.BLOB,
}

# Each dialect module's SYSTEM_COLUMNS: columns every row has without the table declaring
# them (row addresses, transaction ids, the table's own catalog oid). Refused unless a table
# of the warehouse really has a column by that name.

# Qualifiers a function may carry that still name the engine's built-ins.
BUILTIN_SCHEMAS = frozenset({"pg_catalog", "main", "system"})
