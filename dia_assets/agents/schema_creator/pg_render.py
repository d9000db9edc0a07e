"""The Schema Creator's DuckDB load SQL rendered for PostgreSQL, keeping DuckDB's meaning where
the engines differ (the dbt export of a PostgreSQL warehouse, `dbt_export`).

The load is written once, in DuckDB's dialect (`sqlgen`, `value_parsing`); this module rewrites
what PostgreSQL lacks or reads differently and lets sqlglot transpile the rest:

- `TRY_CAST(text AS T)` becomes a CASE over `pg_input_is_valid` (PostgreSQL's cast raises),
  with DuckDB's rules: integers are read as numbers and rounded (DuckDB reads '2.5' as 3),
  numbers need a digit (PostgreSQL's numeric also reads 'NaN'), and dates, times and
  timestamps are read in their ISO forms only (PostgreSQL also reads 'Jan 5 2024' and
  '05-01-2024' by its DateStyle, DuckDB does not). `ISO_FORMS` names what is read; a value
  DuckDB reads outside them ('2024/01/05', 'epoch') is NULL here (docs/dbt.md).
- `try_strptime(text, format)` becomes `dia_strptime(text, pattern, fields)`, a function the
  export creates in dbt's schema (`FUNCTIONS`): the format as a regular expression, the parts
  put together as an ISO timestamp and checked, NULL where DuckDB's strptime gives NULL.
  `strptime_pattern` refuses a directive it does not know (`UnsupportedFormat`).
- a time without a UTC offset, read into TIMESTAMPTZ, is UTC (DIA's load sets DuckDB's
  TimeZone to UTC), whatever the dbt session's time zone.
- every cast target is the type DIA's own PostgreSQL tables have (`sqlgen.pg_type`).
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from dia_assets.agents.schema_creator.sqlgen import pg_type
from dia_assets.platform.naming import sql_str

FUNCTION = "dia_strptime"

# strftime directive -> (regular expression of its text as DuckDB's strptime reads it, field)
_DIRECTIVES = {
    "Y": ("([0-9]{1,4})", "Y"), "y": ("([0-9]{1,2})", "y"), "m": ("([0-9]{1,2})", "m"),
    "d": ("([0-9]{1,2})", "d"), "H": ("([0-9]{1,2})", "H"), "M": ("([0-9]{1,2})", "M"),
    "S": ("([0-9]{1,2})", "S"), "b": ("([A-Za-z]{3})", "b"), "B": ("([A-Za-z]+)", "B"),
}
_REGEX_SPECIAL = set(".^$*+?()[]{}|\\")
_INTEGERS = {"INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "HUGEINT", "INT128", "INT4", "INT8", "INT2"}
_RANGES = {"TINYINT": (-128, 127)}  # narrower in DuckDB than the PostgreSQL type it becomes (SMALLINT)
_FLOATS = {"DOUBLE", "FLOAT", "REAL", "DOUBLE PRECISION"}
_OTHERS = {"DECIMAL", "NUMERIC", "BOOLEAN", "DATE", "TIME", "TIMESTAMP", "TIMESTAMPTZ", "TIMESTAMP WITH TIME ZONE",
           "VARCHAR", "TEXT", "STRING", "JSON"}

_DATE = "[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}"
_TIME = "[0-9]{1,2}:[0-9]{2}(:[0-9]{2}([.][0-9]+)?)?"
_ZONE = "(Z|[+-][0-9]{2}(:?[0-9]{2})?)?"
_OFFSET = f":[0-9]{{2}}([.][0-9]+)?{_ZONE[:-1]}$"  # a time with its UTC offset
# the text forms a TRY_CAST to a date/time type reads here (DuckDB reads a few more)
ISO_FORMS = {
    "DATE": f"^{_DATE}([ T]{_TIME})?$",
    "TIMESTAMP": f"^{_DATE}([ T]{_TIME})?$",
    "TIMESTAMPTZ": f"^{_DATE}([ T]{_TIME}{_ZONE})?$",
    "TIME": f"^{_TIME}$",
}

FUNCTIONS = """\
{# Written by `dia dbt export`: DuckDB's try_strptime for the PostgreSQL models (pg_render.py):
   `pattern` is the format as a regular expression, `fields` names its groups (Y y m b B d H M S);
   NULL where the text does not match or is no valid timestamp. Run by on-run-start. #}
{% macro dia_functions() %}
do $dia$ begin
  if current_setting('server_version_num')::int < 160000 then
    raise exception 'this DIA export needs PostgreSQL 16 or later (pg_input_is_valid), not %', version();
  end if;
end $dia$;
create schema if not exists {{ adapter.quote(target.schema) }};
create or replace function {{ adapter.quote(target.schema) }}.dia_strptime(v text, pattern text, fields text)
returns timestamp language plpgsql immutable as $dia$
declare
  m text[] := regexp_match(v, pattern);
  months text[] := array['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august',
                         'september', 'october', 'november', 'december'];
  y int := 1900; mo int := 1; d int := 1; h int := 0; mi int := 0; s int := 0;
  f text; x text; t text;
begin
  if m is null then return null; end if;
  for i in 1 .. length(fields) loop
    f := substr(fields, i, 1); x := m[i];
    if f = 'Y' then y := x::int;
    elsif f = 'y' then y := x::int + case when x::int < 69 then 2000 else 1900 end;
    elsif f = 'm' then mo := x::int;
    elsif f = 'b' then mo := array_position(array(select left(n, 3) from unnest(months) n), lower(x));
    elsif f = 'B' then mo := array_position(months, lower(x));
    elsif f = 'd' then d := x::int;
    elsif f = 'H' then h := x::int;
    elsif f = 'M' then mi := x::int;
    elsif f = 'S' then s := x::int;
    end if;
  end loop;
  if mo is null or h > 23 or mi > 59 or s > 59 then return null; end if;
  t := format('%s-%s-%s %s:%s:%s', lpad(y::text, 4, '0'), mo, d, h, mi, s);
  if not pg_input_is_valid(t, 'timestamp') then return null; end if;
  return t::timestamp;
end
$dia$;
{% endmacro %}
"""


class UnsupportedFormat(ValueError):
    """A strftime format with a directive `dia_strptime` does not read."""


def strptime_pattern(fmt: str) -> tuple[str, str]:
    """(regular expression, fields) reading the texts DuckDB's `strptime(text, fmt)` reads:
    digits 1 to 2 wide (1 to 4 for %Y), month names in any case, a run of whitespace for a
    space, trailing whitespace allowed."""
    pattern, fields, i = "^", "", 0
    while i < len(fmt):
        ch = fmt[i]
        if ch == "%":
            code = fmt[i + 1:i + 2]
            if code == "%":
                pattern += "%"
            elif code in _DIRECTIVES:
                regex, field = _DIRECTIVES[code]
                pattern, fields = pattern + regex, fields + field
            else:
                raise UnsupportedFormat(f"date format {fmt!r}: %{code} is not a directive dia_strptime reads")
            i += 2
            continue
        pattern += r"\s+" if ch.isspace() else ("\\" + ch if ch in _REGEX_SPECIAL else ch)
        i += 1
    return pattern + r"\s*$", fields


def renders(sql_type: str) -> bool:
    """Whether a refined column of this (DuckDB) type is parsed here as DuckDB parses it."""
    return _base(exp.DataType.build(sql_type, dialect="duckdb").sql("duckdb")) in _INTEGERS | _FLOATS | _OTHERS


def _base(type_sql: str) -> str:
    return type_sql.upper().split("(")[0].strip()


def _is_valid(value: str, pg: str) -> str:
    return f"pg_input_is_valid({value}, {sql_str(pg)})"


def _try_cast(value: exp.Expression, to: exp.DataType) -> exp.Expression:
    """DuckDB's TRY_CAST of text as PostgreSQL: the cast guarded so it cannot raise."""
    name = to.sql("duckdb").upper()
    base = _base(name)
    pg = pg_type(name)
    v = value.sql("postgres")
    if base in _INTEGERS:
        number = f"round(CAST({v} AS NUMERIC))"
        fits = _is_valid(f"CAST({number} AS TEXT)", pg)
        if base in _RANGES:
            fits += f" AND {number} BETWEEN {_RANGES[base][0]} AND {_RANGES[base][1]}"
        sql = (f"CASE WHEN {v} ~ '[0-9]' AND {_is_valid(v, 'numeric')} THEN CASE WHEN "
               f"{fits} THEN CAST({number} AS {pg}) END END")
    elif base in ("DECIMAL", "NUMERIC"):
        sql = f"CASE WHEN {v} ~ '[0-9]' AND {_is_valid(v, pg)} THEN CAST({v} AS {pg}) END"
    elif base in _FLOATS:
        sql = f"CASE WHEN {_is_valid(v, pg)} THEN CAST({v} AS {pg}) END"
    elif pg == "TIMESTAMPTZ":  # a text without an offset is a UTC time, as in DIA's load
        sql = (f"CASE WHEN {v} ~ {sql_str(ISO_FORMS[pg])} AND {_is_valid(v, pg)} THEN CASE WHEN {v} ~ "
               f"{sql_str(_OFFSET)} THEN CAST({v} AS {pg}) ELSE CAST({v} AS TIMESTAMP) AT TIME ZONE 'UTC' END END")
    else:
        form = ISO_FORMS.get(base)
        guard = f"{v} ~ {sql_str(form)} AND " if form else ""
        sql = f"CASE WHEN {guard}{_is_valid(v, pg)} THEN CAST({v} AS {pg}) END"
    return sqlglot.parse_one(sql, read="postgres")


def _strptime(call: exp.Anonymous, schema: str, value: exp.Expression) -> exp.Expression:
    fmt = call.expressions[1]
    pattern, fields = strptime_pattern(fmt.name)
    return sqlglot.parse_one(f"{schema}.{FUNCTION}({value.sql('postgres')}, {sql_str(pattern)}, "
                             f"{sql_str(fields)})", read="postgres")


def _is_strptime(node: exp.Expression) -> bool:
    return isinstance(node, exp.Anonymous) and node.name.lower() == "try_strptime"


def to_postgres(sql: str, functions_schema: str) -> str:
    """DuckDB load SQL `sql` as PostgreSQL; `dia_strptime` is called in `functions_schema`
    (a name as SQL, or a placeholder the caller replaces)."""

    def rewrite(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.TryCast):
            if _is_strptime(node.this):  # a timestamp or NULL already: the cast cannot fail
                call, to = node.this, pg_type(node.to.sql("duckdb"))
                value = _strptime(call, functions_schema, call.expressions[0].transform(rewrite))
                if to == "TIMESTAMPTZ":  # DIA's load reads a time without offset as UTC
                    return exp.AtTimeZone(this=value, zone=exp.Literal.string("UTC"))
                return exp.cast(value, to)
            return _try_cast(node.this.transform(rewrite), node.to)
        if isinstance(node, exp.Cast):
            return exp.cast(node.this.transform(rewrite), pg_type(node.to.sql("duckdb")))
        if _is_strptime(node):
            return _strptime(node, functions_schema, node.expressions[0].transform(rewrite))
        return node

    tree = sqlglot.parse_one(sql, read="duckdb")
    return tree.transform(rewrite).sql("postgres")
