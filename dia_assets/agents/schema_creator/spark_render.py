"""The Schema Creator's DuckDB load SQL rendered for Spark SQL, keeping DuckDB's meaning where the
engines differ (the dbt export of a Spark warehouse, `dbt_export`, built by dbt-spark).

As `pg_render` does for PostgreSQL, this module rewrites what Spark reads differently and lets
sqlglot transpile the rest. Every cast is a `try_cast`, so the models mean the same with
`spark.sql.ansi.enabled` on or off:

- integers are read as a number and rounded (DuckDB reads '2.5' as 3; Spark truncates to 2);
- numbers need a digit, doubles their plain or exponent form or inf/infinity/nan (Spark's
  cast also reads '1d' and '1f', Java's suffixes), booleans DuckDB's words only, without the
  surrounding whitespace Spark's cast trims;
- dates and timestamps are read in their ISO forms only (`pg_render.ISO_FORMS`: Spark's cast
  to DATE reads '2024-01-05 anything');
- `try_strptime(text, format)` is the format as a regular expression (`pg_render.strptime_pattern`),
  its groups put together by `try_make_timestamp_ntz`, NULL where DuckDB's strptime gives NULL;
- a TIME is text in DIA's Spark warehouse, as DuckDB writes it ('07:05:03.5'): the rendering
  reads the text as DuckDB's TIME does (24:00:00 included) and writes it as DuckDB would;
- DuckDB's TIMESTAMP is Spark's TIMESTAMP_NTZ and its TIMESTAMPTZ Spark's TIMESTAMP (an instant,
  read in the session time zone, which the export's profile sets to UTC as DIA's load does).

A type outside `TYPES` (TIMETZ, INTERVAL, UUID, unsigned integers, ...) has no rendering here:
`renders` says so and the export stops, naming the column.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from dia_assets.agents.schema_creator.pg_render import ISO_FORMS, strptime_pattern

# DuckDB type (base name) -> Spark type
_SIMPLE = {"TINYINT": "TINYINT", "SMALLINT": "SMALLINT", "INTEGER": "INT", "INT": "INT", "INT4": "INT",
           "BIGINT": "BIGINT", "INT8": "BIGINT", "INT2": "SMALLINT", "DOUBLE": "DOUBLE", "FLOAT": "FLOAT",
           "REAL": "FLOAT", "BOOLEAN": "BOOLEAN", "DATE": "DATE", "TIMESTAMP": "TIMESTAMP_NTZ",
           "TIMESTAMPTZ": "TIMESTAMP", "TIMESTAMP WITH TIME ZONE": "TIMESTAMP", "VARCHAR": "STRING",
           "TEXT": "STRING", "STRING": "STRING", "TIME": "STRING"}
_INTEGERS = {"TINYINT", "SMALLINT", "INT", "BIGINT"}
TYPES = frozenset(_SIMPLE) | {"DECIMAL", "NUMERIC"}
_MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september",
           "october", "november", "december"]
_NUMBER = r"^\s*[+-]?([0-9]+([.][0-9]*)?|[.][0-9]+)([eE][+-]?[0-9]+)?\s*$"
_SPECIAL = r"^\s*[+-]?(inf|infinity|nan)\s*$"
# DuckDB's TIME as text (DIA's Spark warehouse holds a TIME as DuckDB writes it: '07:05:03.5')
_TIME = r"^\s*([0-9]{1,2}):([0-9]{1,2})(:([0-9]{1,2})([.]([0-9]+))?)?\s*$"
_BOOLEAN = ("true", "false", "t", "f", "1", "0", "yes", "no", "y", "n")


def _base(type_sql: str) -> str:
    return type_sql.upper().split("(")[0].strip()


def _duck(sql_type: str | exp.DataType) -> str:
    built = sql_type if isinstance(sql_type, exp.DataType) else exp.DataType.build(sql_type, dialect="duckdb")
    return built.sql("duckdb").upper()


def renders(sql_type: str) -> bool:
    """Whether a refined column of this (DuckDB) type is parsed here as DuckDB parses it."""
    return _base(_duck(sql_type)) in TYPES


def spark_type(sql_type: str | exp.DataType) -> str:
    """The Spark SQL type of a DuckDB type (DECIMAL keeps its precision and scale)."""
    name = _duck(sql_type)
    base = _base(name)
    if base in ("DECIMAL", "NUMERIC"):
        return name.replace("NUMERIC", "DECIMAL")
    if base not in _SIMPLE:
        raise ValueError(f"type {name} has no Spark rendering")
    return _SIMPLE[base]


def spark_str(text: str) -> str:
    """A Spark SQL string literal (backslash is Spark's escape character)."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _time(v: str) -> str:
    """DuckDB's CAST(TRY_CAST(v AS TIME) AS VARCHAR): HH:MM:SS, then the fraction (to the
    microsecond, trailing zeros dropped) when there is one."""
    regex = spark_str(_TIME)

    def group(i: int) -> str:
        return f"regexp_extract({v}, {regex}, {i})"

    h, m = f"try_cast({group(1)} AS INT)", f"try_cast({group(2)} AS INT)"
    s = f"coalesce(try_cast(nullif({group(4)}, '') AS INT), 0)"
    frac = f"regexp_replace(substr({group(6)}, 1, 6), '0+$', '')"
    text = (f"concat(lpad(CAST({h} AS STRING), 2, '0'), ':', lpad(CAST({m} AS STRING), 2, '0'), ':', "
            f"lpad(CAST({s} AS STRING), 2, '0'), CASE WHEN {frac} <> '' THEN concat('.', {frac}) ELSE '' END)")
    valid = f"(({h} < 24 AND {m} < 60 AND {s} < 60) OR ({h} = 24 AND {m} = 0 AND {s} = 0 AND {frac} = ''))"
    return f"CASE WHEN {v} RLIKE {regex} AND {valid} THEN {text} END"


def _try_cast(v: str, to: exp.DataType) -> str:
    """DuckDB's TRY_CAST of text `v` (Spark SQL) to `to`, as Spark SQL."""
    if _base(_duck(to)) == "TIME":
        return _time(v)
    target = spark_type(to)
    if target in _INTEGERS:  # a number, rounded half away from zero as DuckDB does; NULL when out of range
        return (f"CASE WHEN {v} RLIKE '[0-9]' THEN try_cast(round(try_cast({v} AS DECIMAL(38,18))) "
                f"AS {target}) END")
    if target.startswith("DECIMAL"):
        return f"CASE WHEN {v} RLIKE '[0-9]' THEN try_cast({v} AS {target}) END"
    if target in ("DOUBLE", "FLOAT"):
        return (f"CASE WHEN {v} RLIKE {spark_str(_NUMBER)} OR lower({v}) RLIKE {spark_str(_SPECIAL)} "
                f"THEN try_cast({v} AS {target}) END")
    if target == "BOOLEAN":
        words = ", ".join(spark_str(w) for w in _BOOLEAN)
        return f"CASE WHEN lower({v}) IN ({words}) THEN try_cast({v} AS BOOLEAN) END"
    form = {"DATE": ISO_FORMS["DATE"], "TIMESTAMP_NTZ": ISO_FORMS["TIMESTAMP"],
            "TIMESTAMP": ISO_FORMS["TIMESTAMPTZ"]}.get(target)
    if form:
        return f"CASE WHEN {v} RLIKE {spark_str(form)} THEN try_cast({v} AS {target}) END"
    return f"try_cast({v} AS {target})"


def _strptime(v: str, fmt: str) -> str:
    """DuckDB's try_strptime(v, fmt) as a Spark TIMESTAMP_NTZ expression."""
    pattern, fields = strptime_pattern(fmt)
    regex = spark_str(pattern)
    parts = {"Y": "1900", "m": "1", "d": "1", "H": "0", "M": "0", "S": "0"}
    for i, field in enumerate(fields, start=1):
        group = f"regexp_extract({v}, {regex}, {i})"
        number = f"try_cast({group} AS INT)"
        if field == "y":
            parts["Y"] = f"({number} + CASE WHEN {number} < 69 THEN 2000 ELSE 1900 END)"
        elif field in ("b", "B"):
            names = _MONTHS if field == "B" else [m[:3] for m in _MONTHS]
            listed = ", ".join(spark_str(n) for n in names)
            parts["m"] = f"nullif(array_position(array({listed}), lower({group})), 0)"
        else:
            parts[field] = number
    # S: DuckDB reads no leap second; H, M: make_timestamp would read 60 seconds as the next minute
    made = (f"try_make_timestamp_ntz({parts['Y']}, {parts['m']}, {parts['d']}, {parts['H']}, {parts['M']}, "
            f"{parts['S']})")
    return f"CASE WHEN {v} RLIKE {regex} AND {parts['S']} < 60 THEN {made} END"


def _is_strptime(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and node.name.lower() == "try_strptime"


def _parsed(sql: str) -> exp.Expression:
    return sqlglot.parse_one(sql, read="spark")


def to_spark(sql: str) -> str:
    """DuckDB load SQL `sql` as Spark SQL."""

    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.TryCast):
            if _is_strptime(node.this):  # a timestamp or NULL already: the cast cannot fail
                call = node.this
                value = _strptime(call.expressions[0].transform(rewrite).sql("spark"), call.expressions[1].name)
                return _parsed(f"CAST({value} AS {spark_type(node.to)})")
            return _parsed(_try_cast(node.this.transform(rewrite).sql("spark"), node.to))
        if isinstance(node, exp.Cast):
            return _parsed(f"CAST({node.this.transform(rewrite).sql('spark')} AS {spark_type(node.to)})")
        if _is_strptime(node):
            return _parsed(_strptime(node.expressions[0].transform(rewrite).sql("spark"), node.expressions[1].name))
        return node

    tree = sqlglot.parse_one(sql, read="duckdb")
    return tree.transform(rewrite).sql("spark")
