"""Text -> typed value, as DuckDB SQL, from the evidence in a column's `ValueFormat`.

The Data Interpreter uses these expressions to count unparseable values; the Schema
Creator uses the same ones to load refined tables, so both agree on what parses.
"""

from __future__ import annotations

from dia_assets.contracts.interpretation import ValueFormat
from dia_assets.contracts.manifest import ManifestColumn
from dia_assets.platform.naming import sql_str

NULL_TOKENS = ["na", "n/a", "n.a.", "null", "nan", "nil", "none", "#n/a", "-", "--", "?", "(null)", "<null>"]
TRUE_WORDS = ["true", "t", "yes", "y"]
FALSE_WORDS = ["false", "f", "no", "n"]
CURRENCY_CHARS = "$€£¥"
TEXT_TYPES = ("VARCHAR", "TEXT", "STRING", "JSON")


def sql_list(items: list[str]) -> str:
    return "(" + ", ".join(sql_str(i) for i in items) + ")"


def present(col: str, null_tokens: list[str] | None = None, trim: bool = True) -> str:
    """The value when it carries information: NULL for NULL, blanks and null tokens."""
    tokens = NULL_TOKENS if null_tokens is None else null_tokens
    value = f"trim({col})" if trim else col
    token_test = f" OR lower(trim({col})) IN {sql_list(tokens)}" if tokens else ""
    return f"(CASE WHEN {col} IS NULL OR trim({col}) = ''{token_test} THEN NULL ELSE {value} END)"


def numeric_text(value: str, fmt: ValueFormat) -> str:
    """Canonical `-1234.5` text from `$1,234.50`, `1.234,5`, `12 %`."""
    expr = value
    if fmt.currency_symbols or fmt.percent:
        strip = "".join(CURRENCY_CHARS) + "%"
        expr = f"regexp_replace({expr}, '[{strip}\\s]|USD|EUR|GBP', '', 'g')"
    if fmt.thousands_separator:
        expr = f"replace({expr}, {sql_str(fmt.thousands_separator)}, '')"
    if fmt.decimal_separator != ".":
        expr = f"replace({expr}, {sql_str(fmt.decimal_separator)}, '.')"
    return expr


def parse_expression(value: str, inferred_type: str, fmt: ValueFormat) -> str:
    """SQL turning present text `value` into `inferred_type`; NULL where it does not parse."""
    t = inferred_type.upper()
    if t in ("VARCHAR", "TEXT", "JSON"):
        return value
    if t in ("INTEGER", "BIGINT", "SMALLINT", "HUGEINT", "DOUBLE") or t.startswith("DECIMAL"):
        return f"TRY_CAST({numeric_text(value, fmt)} AS {t})"
    if t == "BOOLEAN":
        trues = fmt.true_values or TRUE_WORDS
        falses = fmt.false_values or FALSE_WORDS
        return (
            f"(CASE WHEN lower({value}) IN {sql_list(trues)} THEN true "
            f"WHEN lower({value}) IN {sql_list(falses)} THEN false END)"
        )
    if t in ("DATE", "TIMESTAMP", "TIMESTAMPTZ"):
        if not fmt.date_formats:
            return f"TRY_CAST({value} AS {t})"
        parts = [f"TRY_CAST(try_strptime({value}, {sql_str(f)}) AS {t})" for f in fmt.date_formats]
        return parts[0] if len(parts) == 1 else f"COALESCE({', '.join(parts)})"
    if t == "TIME":
        return f"TRY_CAST({value} AS TIME)"
    return f"TRY_CAST({value} AS {t})"


def is_text_type(sql_type: str) -> bool:
    return sql_type.upper().split("(")[0].strip() in TEXT_TYPES


def value_sql(col: ManifestColumn, raw: str, plain: bool = False) -> str:
    """Raw staging text -> refined value. Text keeps NULL vs '' unless evidence says otherwise.

    `plain` (typed columns only, see `plain_parse_columns`): parse the trimmed text without
    first testing for blanks and null tokens. The same value when the parse itself gives
    NULL for every blank or null-token text, and several times cheaper: the token test
    (lower, trim, a 13-way IN) costs far more than the cast."""
    fmt = col.value_format
    if not is_text_type(col.type):
        return parse_expression(f"trim({raw})" if plain else present(raw), col.type, fmt)
    value = f"trim({raw})" if fmt.trim else raw
    if col.category_map:
        mapping: dict[str, str] = {}
        for key, canonical in col.category_map.items():
            mapping[key] = canonical
            if fmt.trim:
                mapping.setdefault(key.strip(), canonical)
        whens = " ".join(f"WHEN {sql_str(k)} THEN {sql_str(v)}" for k, v in mapping.items())
        value = f"(CASE {value} {whens} ELSE {value} END)"
    tests = []
    if fmt.null_tokens or col.blank_as_null:
        tests.append(f"trim({raw}) = ''")
    if fmt.null_tokens:
        tests.append(f"lower(trim({raw})) IN {sql_list(fmt.null_tokens)}")
    if tests:
        value = f"(CASE WHEN {' OR '.join(tests)} THEN NULL ELSE {value} END)"
    return value
