"""SQL for the schema: DDL and the staging -> refined -> rejects load, per table.

SQL is written in DuckDB's dialect (the engine that parses raw files) and transpiled
with sqlglot for other targets. Values are parsed with the interpreter's own
expressions (`value_parsing`), so its unparseable counts equal the loader's rejects.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from dia_assets.agents.interpreter.naming import quote_ident as q
from dia_assets.agents.schema_creator.plan import is_text_type
from dia_assets.agents.value_parsing import parse_expression, present, sql_list, sql_str
from dia_assets.contracts.manifest import Manifest, ManifestColumn, ManifestTable

PROVENANCE = [
    ("_source_file", "VARCHAR"),
    ("_source_row", "BIGINT"),
    ("_loaded_at", "TIMESTAMP"),
    ("_content_hash", "VARCHAR"),
]
REJECT_EXTRA = [("_reason", "VARCHAR"), ("_raw_line", "VARCHAR")]


def raw_view(table: ManifestTable) -> str:
    """Name of the temporary view over the reader's table for `table`."""
    return f"__raw_{table.name}"


def parsed_table(table: ManifestTable) -> str:
    return f"__parsed_{table.name}"


def staging_ref(table: ManifestTable) -> str:
    return f"staging.{q(table.name)}"


def reject_ref(table: ManifestTable) -> str:
    return f"rejects.{q(table.name)}"


# ---------------------------------------------------------------- values


def present_sql(col: ManifestColumn, raw: str) -> str:
    """The raw text when it carries information (the interpreter's definition)."""
    return present(raw)


def value_sql(col: ManifestColumn, raw: str) -> str:
    """Raw staging text -> refined value. Text keeps NULL vs '' unless evidence says otherwise."""
    fmt = col.value_format
    if not is_text_type(col.type):
        return parse_expression(present(raw), col.type, fmt)
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


def failure_sql(col: ManifestColumn, raw: str) -> str | None:
    """A reason when the value is present but does not parse; None for text."""
    if is_text_type(col.type):
        return None
    return (
        f"CASE WHEN {present(raw)} IS NOT NULL AND {value_sql(col, raw)} IS NULL "
        f"THEN {sql_str(f'{col.source_column}: not a {col.type}')} END"
    )


# ---------------------------------------------------------------- DDL


def staging_columns_ddl(table: ManifestTable, extra: list[tuple[str, str]] = ()) -> str:
    cols = [f"{q(c)} VARCHAR" for c in table.source_columns]
    cols += [f"{q(n)} {t}" for n, t in [*PROVENANCE, *extra]]
    return ", ".join(cols)


def create_staging_sql(table: ManifestTable) -> str:
    return f"CREATE TABLE {staging_ref(table)} ({staging_columns_ddl(table)})"


def create_reject_sql(table: ManifestTable) -> str:
    return f"CREATE TABLE {reject_ref(table)} ({staging_columns_ddl(table, REJECT_EXTRA)})"


def create_refined_sql(
    table: ManifestTable, primary_key: bool | None = None, foreign_keys: list | None = None
) -> str:
    pk = table.primary_key_enforced if primary_key is None else primary_key
    fks = [fk for fk in table.foreign_keys if fk.enforced] if foreign_keys is None else foreign_keys
    parts = [
        f"{q(c.name)} {c.type}" + ("" if c.nullable or not pk else " NOT NULL") for c in table.columns
    ]
    if pk and table.primary_key:
        parts.append(f"PRIMARY KEY ({', '.join(q(c) for c in table.primary_key)})")
    for fk in fks:
        parts.append(
            f"FOREIGN KEY ({', '.join(q(c) for c in fk.columns)}) REFERENCES "
            f"{q(fk.ref_table)} ({', '.join(q(c) for c in fk.ref_columns)})"
        )
    return f"CREATE TABLE {q(table.name)} ({', '.join(parts)})"


def ddl_script(manifest: Manifest) -> str:
    out = ["CREATE SCHEMA IF NOT EXISTS staging", "CREATE SCHEMA IF NOT EXISTS rejects"]
    for table in manifest.tables:
        out += [create_staging_sql(table), create_reject_sql(table), create_refined_sql(table)]
    return ";\n".join(out) + ";\n"


# ---------------------------------------------------------------- load


def staging_insert_sql(table: ManifestTable, loaded_at: str) -> str:
    cols = [f"CAST({q(c)} AS VARCHAR)" for c in table.source_columns]
    names = ", ".join(q(c) for c in table.source_columns)
    hashed = f"md5(to_json([{', '.join(cols)}]))" if cols else "md5('')"
    return (
        f"INSERT INTO {staging_ref(table)} ({names}, _source_file, _source_row, _loaded_at, _content_hash) "
        f"SELECT {', '.join(f'{c} AS {q(n)}' for c, n in zip(cols, table.source_columns, strict=True))}, "
        f"{sql_str(table.source_ref)}, row_number() OVER (), TIMESTAMP {sql_str(loaded_at)}, {hashed} "
        f"FROM {q(raw_view(table))}"
    )


def parse_sql(table: ManifestTable) -> str:
    """Typed values, a reject reason ('' when clean) and a duplicate marker per staged row."""
    values = [f"{value_sql(c, q(c.source_column))} AS {q(c.name)}" for c in table.columns]
    reasons = [r for c in table.columns if (r := failure_sql(c, q(c.source_column)))]
    reason = f"concat_ws('; ', {', '.join(reasons)})" if reasons else "''"
    dup = (
        "row_number() OVER (PARTITION BY _content_hash ORDER BY _source_row)"
        if table.dedup == "exact_rows" else "1"
    )
    return (
        f"CREATE TEMP TABLE {q(parsed_table(table))} AS SELECT _source_row, {dup} AS _dup, "
        f"{reason} AS _reason, {', '.join(values)} FROM {staging_ref(table)}"
    )


def reject_insert_sql(table: ManifestTable) -> str:
    names = ", ".join(q(c) for c in table.source_columns)
    return (
        f"INSERT INTO {reject_ref(table)} ({names}, _source_file, _source_row, _loaded_at, _content_hash, _reason) "
        f"SELECT {', '.join('s.' + q(c) for c in table.source_columns)}, s._source_file, s._source_row, "
        f"s._loaded_at, s._content_hash, p._reason FROM {staging_ref(table)} s "
        f"JOIN {q(parsed_table(table))} p ON s._source_row = p._source_row "
        f"WHERE p._dup = 1 AND p._reason <> ''"
    )


def refined_insert_sql(table: ManifestTable) -> str:
    names = ", ".join(q(c.name) for c in table.columns)
    return (
        f"INSERT INTO {q(table.name)} ({names}) SELECT {names} FROM {q(parsed_table(table))} "
        f"WHERE _dup = 1 AND _reason = '' ORDER BY _source_row"
    )


def lineage_select_sql(table: ManifestTable) -> str:
    """The refined table as one SELECT over staging, for column lineage."""
    values = [f"{value_sql(c, q(c.source_column))} AS {q(c.name)}" for c in table.columns]
    return f"SELECT {', '.join(values)} FROM {staging_ref(table)}"


def load_script(manifest: Manifest, loaded_at: str = "1970-01-01 00:00:00") -> str:
    out = [
        "-- Generated by the DIA Schema Creator. Each table: raw reader view -> staging",
        "-- (all text + provenance) -> typed parse -> rejects (reason) and refined (deduplicated).",
    ]
    for table in manifest.tables:
        out.append(f"\n-- {table.name} <- {table.source_ref}")
        for sql in (staging_insert_sql(table, loaded_at), parse_sql(table),
                    reject_insert_sql(table), refined_insert_sql(table)):
            out.append(sql + ";")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- dialects


def pg_type(sql_type: str) -> str:
    built = exp.DataType.build(sql_type, dialect="duckdb")
    if built.this in (exp.DataType.Type.INT128, exp.DataType.Type.UINT128):
        return "NUMERIC(38, 0)"
    if built.this == exp.DataType.Type.DOUBLE:
        return "DOUBLE PRECISION"
    return built.sql("postgres")


def transpile(sql: str, dialect: str) -> str:
    if dialect == "duckdb":
        return sql
    return ";\n".join(sqlglot.transpile(sql, read="duckdb", write=dialect))
