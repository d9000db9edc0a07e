"""SQL for the schema: DDL and the staging -> refined -> rejects load, per table.

SQL is written in DuckDB's dialect (the engine that parses raw files) and transpiled
with sqlglot for other targets. Values are parsed with the interpreter's own
expressions (`value_parsing`), so its unparseable counts equal the loader's rejects.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from itertools import product

from sqlglot import exp

from dia_assets.agents.schema_creator.layout import PROVENANCE, REJECT_EXTRA
from dia_assets.agents.value_parsing import (
    NULL_TOKENS,
    is_text_type,
    parse_expression,
    present,
    value_sql,
)
from dia_assets.contracts.manifest import Manifest, ManifestColumn, ManifestTable
from dia_assets.platform.naming import quote_ident as q
from dia_assets.platform.naming import sql_str


def raw_view(table: ManifestTable) -> str:
    """Name of the temporary view over the reader's table for `table`; it adds the
    reader table's `rowid` as `__dia_rowid` (record order in the file, from 0)."""
    return f"__raw_{table.name}"


def row_order(table: ManifestTable) -> str:
    """File order of staged rows: by row number, and first by file for a table of several files
    (the plan lists them in `_source_file` order)."""
    return "_source_file, _source_row" if table.source_files else "_source_row"


def staging_ref(table: ManifestTable) -> str:
    return f"staging.{q(table.name)}"


def reject_ref(table: ManifestTable) -> str:
    return f"rejects.{q(table.name)}"


# ---------------------------------------------------------------- values


def present_sql(col: ManifestColumn, raw: str) -> str:
    """The raw text when it carries information (the interpreter's definition)."""
    return present(raw)


def null_token_texts() -> list[str]:
    """Every text `present` reads as missing once trimmed: '' and each spelling whose
    DuckDB `lower()` is a null token (ASCII case variants, and U+0130, the one other code
    point DuckDB lowers to an ASCII letter of a token: to 'i')."""
    out = [""]
    for token in NULL_TOKENS:
        choices = [(ch, ch.upper(), *(("\u0130",) if ch == "i" else ())) if ch.isalpha() else (ch,) for ch in token]
        out += ["".join(p) for p in product(*choices)]
    return out


def plain_parse_check_sql(table: ManifestTable) -> str | None:
    """One row, one boolean per typed column: whether its parse gives NULL for NULL and for
    every `null_token_texts()` value, i.e. whether `value_sql(col, raw, plain=True)` equals
    `value_sql(col, raw)` on any text. None when the table has no typed column."""
    typed = [c for c in table.columns if not is_text_type(c.type)]
    if not typed:
        return None
    texts = ", ".join(sql_str(t) for t in null_token_texts())
    checks = ", ".join(
        f"bool_and(({parse_expression('v', c.type, c.value_format)}) IS NULL) AND "
        f"({parse_expression('CAST(NULL AS VARCHAR)', c.type, c.value_format)}) IS NULL"
        for c in typed)
    return f"SELECT {checks} FROM (SELECT unnest([{texts}]) AS v) t"


def plain_parse_columns(rows: Callable[[str], list[tuple]], table: ManifestTable) -> frozenset[str]:
    """The typed columns (by name) that may be parsed `plain`, decided by running
    `plain_parse_check_sql` through `rows` (DuckDB SQL -> result rows)."""
    sql = plain_parse_check_sql(table)
    if sql is None:
        return frozenset()
    typed = [c for c in table.columns if not is_text_type(c.type)]
    return frozenset(c.name for c, ok in zip(typed, rows(sql)[0], strict=True) if ok)


def failure_sql(col: ManifestColumn, raw: str) -> str | None:
    """A reason when the value is present but does not parse; None for text."""
    if is_text_type(col.type):
        return None
    return (
        f"CASE WHEN {present(raw)} IS NOT NULL AND {value_sql(col, raw)} IS NULL "
        f"THEN {sql_str(f'{col.source_column}: not a {col.type}')} END"
    )


# ---------------------------------------------------------------- DDL


def staging_columns(table: ManifestTable, extra: list[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """(name, type) of a staging table's columns, and with `REJECT_EXTRA` of its reject table's."""
    return [*((c, "VARCHAR") for c in table.source_columns), *PROVENANCE, *extra]


def staging_columns_ddl(table: ManifestTable, extra: list[tuple[str, str]] = ()) -> str:
    return ", ".join(f"{q(n)} {t}" for n, t in staging_columns(table, extra))


def create_staging_sql(table: ManifestTable) -> str:
    return f"CREATE TABLE {staging_ref(table)} ({staging_columns_ddl(table)})"


def create_reject_sql(table: ManifestTable) -> str:
    return f"CREATE TABLE {reject_ref(table)} ({staging_columns_ddl(table, REJECT_EXTRA)})"


def create_refined_sql(
    table: ManifestTable, primary_key: bool | None = None, foreign_keys: list | None = None,
    key_clause: bool = True,
) -> str:
    """The refined table's DDL. `key_clause=False` leaves out the PRIMARY KEY clause (keeping
    its NOT NULLs) for a bulk load that adds the key afterwards (`add_primary_key_sql`)."""
    pk = table.primary_key_enforced if primary_key is None else primary_key
    fks = [fk for fk in table.foreign_keys if fk.enforced] if foreign_keys is None else foreign_keys
    parts = [
        f"{q(c.name)} {c.type}" + ("" if c.nullable or not pk else " NOT NULL") for c in table.columns
    ]
    if pk and table.primary_key and key_clause:
        parts.append(f"PRIMARY KEY ({', '.join(q(c) for c in table.primary_key)})")
    for fk in fks:
        parts.append(
            f"FOREIGN KEY ({', '.join(q(c) for c in fk.columns)}) REFERENCES "
            f"{q(fk.ref_table)} ({', '.join(q(c) for c in fk.ref_columns)})"
        )
    return f"CREATE TABLE {q(table.name)} ({', '.join(parts)})"


def add_primary_key_sql(table: ManifestTable) -> str:
    """The key of a bulk-loaded refined table: one index build instead of one insert per row."""
    return f"ALTER TABLE {q(table.name)} ADD PRIMARY KEY ({', '.join(q(c) for c in table.primary_key)})"


def ddl_script(manifest: Manifest) -> str:
    out = ["CREATE SCHEMA IF NOT EXISTS staging", "CREATE SCHEMA IF NOT EXISTS rejects"]
    for table in manifest.tables:
        out += [create_staging_sql(table), create_reject_sql(table), create_refined_sql(table)]
    return ";\n".join(out) + ";\n"


# ---------------------------------------------------------------- load


def row_hash_sql(fields: list[str]) -> str:
    """A 63-bit hash of the fields (NULL and '' hash apart) that identifies exact duplicate
    records, as a BIGINT (PostgreSQL has no unsigned type). md5 over a concatenation cost as
    much as the rest of the staging insert; the same hash as 16 hex digits cost a third."""
    return f"CAST(hash({', '.join(fields)}) >> 1 AS BIGINT)"


def _identity(table: ManifestTable, cols: list[str]) -> list[str]:
    """What makes two staged rows copies: their texts; for a table of several files, their values
    as parsed (`2.5` from a JSON number and `2.50` from a CSV are one value), text that does not
    parse as written (the interpreter's `one_table.row_identity`)."""
    if not table.source_files:
        return cols
    typed = {c.source_column: c for c in table.columns if not is_text_type(c.type)}
    return [f"coalesce(CAST({value_sql(typed[s], q(s))} AS VARCHAR), {raw})" if s in typed else raw
            for s, raw in zip(table.source_columns, cols, strict=True)]


def _staging_select(table: ManifestTable, loaded_at: str) -> list[tuple[str, str]]:
    """(expression, column) pairs of a staging row, read from the raw view."""
    cols = [f"CAST({q(c)} AS VARCHAR)" for c in table.source_columns]
    hashed = row_hash_sql(_identity(table, cols)) if cols else "CAST(0 AS BIGINT)"
    file = "__dia_file" if table.source_files else sql_str(table.files()[0].ref)  # see load._raw_view
    return [*zip(cols, table.source_columns, strict=True), (file, "_source_file"),
            ("__dia_rowid + 1", "_source_row"), (f"TIMESTAMP {sql_str(loaded_at)}", "_loaded_at"),
            (hashed, "_content_hash")]


def staging_insert_sql(table: ManifestTable, loaded_at: str) -> str:
    pairs = _staging_select(table, loaded_at)
    names = ", ".join(q(c) for c in table.source_columns)
    return (
        f"INSERT INTO {staging_ref(table)} ({names}, _source_file, _source_row, _loaded_at, _content_hash) "
        f"SELECT {', '.join(f'{e} AS {q(n)}' for e, n in pairs[:len(table.source_columns)])}, "
        f"{', '.join(e for e, _ in pairs[len(table.source_columns):])} FROM {q(raw_view(table))}"
    )


def staging_ctas_sql(table: ManifestTable, loaded_at: str) -> str:
    """Staging made in one statement from its one read: the table `create_staging_sql` +
    `staging_insert_sql` make (same columns, types and rows; the file order is in
    `_source_row`, the load writes rows unordered), written as a bulk CTAS."""
    types = dict([*((c, "VARCHAR") for c in table.source_columns), *PROVENANCE])
    select = ", ".join(f"CAST({e} AS {types[n]}) AS {q(n)}" for e, n in _staging_select(table, loaded_at))
    return f"CREATE TABLE {staging_ref(table)} AS SELECT {select} FROM {q(raw_view(table))}"


def dup_sql(table: ManifestTable) -> str:
    """1 for the first copy of each exact duplicate row (by content hash), in file order."""
    if table.dedup == "exact_rows":
        return f"row_number() OVER (PARTITION BY _content_hash ORDER BY {row_order(table)})"
    return "1"


def _reasons(table: ManifestTable, policy: str) -> str:
    found = [r for c in table.columns if c.on_error == policy and (r := failure_sql(c, q(c.source_column)))]
    return f"concat_ws('; ', {', '.join(found)})" if found else "''"


def reject_select_sql(table: ManifestTable, staging: str | None = None) -> str:
    """Staged rows (first copies) with a value that does not parse, raw and with the reason, as
    the reject table's columns up to `_reason` and `_row_kept` (no `_raw_line`: the reader's
    unparseable lines never reach staging). `staging`: the staging table's reference (default
    `staging_ref`; the dbt export passes a `source()` call)."""
    names = ", ".join(q(c) for c in table.source_columns)
    return (
        f"SELECT {names}, _source_file, _source_row, _loaded_at, _content_hash, "
        f"concat_ws('; ', nullif(_row_reason, ''), nullif(_value_reason, '')) AS _reason, "
        f"_row_reason = '' AS _row_kept FROM ("
        f"SELECT *, {dup_sql(table)} AS _dup, {_reasons(table, 'reject_row')} AS _row_reason, "
        f"{_reasons(table, 'null_value')} AS _value_reason FROM {staging or staging_ref(table)}) s "
        f"WHERE _dup = 1 AND (_row_reason <> '' OR _value_reason <> '') ORDER BY {row_order(table)}"
    )


def reject_insert_sql(table: ManifestTable) -> str:
    names = ", ".join(q(c) for c in table.source_columns)
    return (
        f"INSERT INTO {reject_ref(table)} ({names}, _source_file, _source_row, _loaded_at, _content_hash, "
        f"_reason, _row_kept) {reject_select_sql(table)}"
    )


def row_checks(table: ManifestTable) -> list[tuple[int, ManifestColumn]]:
    """The typed columns whose unparseable value refuses the row, with their position."""
    return [(i, c) for i, c in enumerate(table.columns) if c.on_error == "reject_row" and not is_text_type(c.type)]


def refused_rows_sql(table: ManifestTable, plain: Collection[str], name: str, chunk: int) -> list[str]:
    """Statements that fill the temporary table `name` with the row order (`row_order`) of the
    staged rows some check refuses, `chunk` checks per statement (a row may appear once per
    failing chunk). `refined_select_sql(..., refused=name)` then selects the same rows as with
    its checks inline, without carrying them, and the raw texts they read, in one statement."""
    tests = [f"CASE WHEN {value_sql(c, q(c.source_column), c.name in plain)} IS NOT NULL THEN true "
             f"ELSE {present(q(c.source_column))} IS NULL END" for _i, c in row_checks(table)]
    key, source = row_order(table), staging_ref(table)
    out = [f"CREATE OR REPLACE TEMP TABLE {q(name)} AS SELECT {key} FROM {source} WHERE false"]
    out += [f"INSERT INTO {q(name)} SELECT {key} FROM {source} WHERE NOT ({' AND '.join(tests[at:at + chunk])})"
            for at in range(0, len(tests), chunk)]
    return out


def refined_select_sql(table: ManifestTable, plain: Collection[str] = (), refused: str | None = None,
                       staging: str | None = None) -> str:
    """Typed first copies of every staged row whose values all parse (or may be NULLed).
    Columns named in `plain` are parsed without the token test (`value_sql`); a row is
    refused when a value is NULL although its text is present. The costly presence test
    runs for NULL values only: a CASE branch is evaluated for the rows that reach it (a
    projected test, or one inside AND/OR, was measured to run on every row). `refused`: a
    table `refused_rows_sql` filled; rows named there are left out instead of checked here.
    `staging`: the staging table's reference (default `staging_ref`)."""
    names = ", ".join(q(c.name) for c in table.columns)
    inner = [f"{value_sql(c, q(c.source_column), c.name in plain)} AS {q(c.name)}" for c in table.columns]
    where = ["_dup = 1"] if table.dedup == "exact_rows" else []
    if refused is None:
        for i, c in row_checks(table):
            inner.append(f"{q(c.source_column)} AS __raw_{i}")  # the parsed value may take the column's name
            where.append(f"CASE WHEN {q(c.name)} IS NOT NULL THEN true ELSE {present(f'__raw_{i}')} IS NULL END")
    else:
        same = " AND ".join(f"x.{k} = p.{k}" for k in row_order(table).split(", "))
        where.append(f"NOT EXISTS (SELECT 1 FROM {q(refused)} x WHERE {same})")
    # The dedup window needs _source_row order; its ORDER BY also keeps such a table in file
    # order (DuckDB keeps an explicit ORDER BY even with preserve_insertion_order off).
    order = f" ORDER BY {row_order(table)}" if table.dedup == "exact_rows" else ""
    return (
        f"SELECT {names} FROM (SELECT {row_order(table)}, {dup_sql(table)} AS _dup, {', '.join(inner)} "
        f"FROM {staging or staging_ref(table)}) p{' WHERE ' + ' AND '.join(where) if where else ''}{order}"
    )


def refined_typed_sql(table: ManifestTable, plain: Collection[str] = (), refused: str | None = None,
                      staging: str | None = None) -> str:
    """The refined table's rows typed as declared: what the bulk load writes, and the body of
    the table's dbt model (`dbt_export`), so the two cannot drift."""
    typed = ", ".join(f"CAST({q(c.name)} AS {c.type}) AS {q(c.name)}" for c in table.columns)
    return f"SELECT {typed} FROM ({refined_select_sql(table, plain, refused, staging)}) r"


def bulk_refined_sql(table: ManifestTable, primary_key: bool, foreign_keys: list,
                     plain: Collection[str] = (), refused: str | None = None) -> list[str]:
    """Statements that build the table `create_refined_sql(table, primary_key, foreign_keys)`
    + `refined_insert_sql` build, with the key indexed after the rows are in. Without foreign
    keys the rows are written by one CTAS (typed as declared, NOT NULLs set after)."""
    out = []
    if foreign_keys:
        out += [create_refined_sql(table, primary_key, foreign_keys, key_clause=False),
                refined_insert_sql(table, plain, refused)]
    else:
        out.append(f"CREATE TABLE {q(table.name)} AS {refined_typed_sql(table, plain, refused)}")
        if primary_key:
            out += [f"ALTER TABLE {q(table.name)} ALTER COLUMN {q(c.name)} SET NOT NULL"
                    for c in table.columns if not c.nullable]
    if primary_key and table.primary_key:
        out.append(add_primary_key_sql(table))
    return out


def refined_insert_sql(table: ManifestTable, plain: Collection[str] = (), refused: str | None = None) -> str:
    names = ", ".join(q(c.name) for c in table.columns)
    return f"INSERT INTO {q(table.name)} ({names}) {refined_select_sql(table, plain, refused)}"


def load_script(manifest: Manifest, loaded_at: str = "1970-01-01 00:00:00") -> str:
    out = [
        "-- Generated by the DIA Schema Creator. Each table: raw reader view -> staging",
        "-- (all text + provenance) -> rejects (raw values + reason) and refined (typed, deduplicated).",
        "-- Staging, reject and refined tables are created as in ddl.sql; refined keys the data",
        "-- contradicts are left out at load time and reported by key_validity.",
    ]
    for table in manifest.tables:
        out.append(f"\n-- {table.name} <- {table.files_label()}")
        for sql in (staging_insert_sql(table, loaded_at), reject_insert_sql(table),
                    create_refined_sql(table), refined_insert_sql(table)):
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


