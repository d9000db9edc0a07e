"""Checks every SQL string passes before it reaches the warehouse.

1. It parses in the warehouse's dialect (sqlglot), one statement only.
2. Statement allow-list: SELECT / set operations for analytical work; INSERT, UPDATE,
   DELETE, MERGE, CREATE, DROP, ALTER only for a declared modification task. Never
   ATTACH, COPY, INSTALL, LOAD, PRAGMA, SET, EXPORT or any other command.
3. Every table is a refined table of the warehouse or a CTE: no table functions, file paths
   or other schemas (`staging`, `rejects`, catalogs), no file/network functions.
4. Every column is qualified against the schema (sqlglot `qualify`); an unknown column is
   refused, with the closest candidates, before execution.

The read-only connection is the second line of defence (see dialects.py).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, SqlglotError
from sqlglot.optimizer.qualify import qualify

READ_STATEMENTS: tuple[type[exp.Expression], ...] = (exp.Select, exp.Union, exp.Intersect, exp.Except)
WRITE_STATEMENTS: tuple[type[exp.Expression], ...] = (
    exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter,
)
# Functions that read or write outside the database, or reach into the engine.
FORBIDDEN_FUNCTIONS = {
    "read_csv", "read_csv_auto", "read_parquet", "parquet_scan", "read_json", "read_json_auto",
    "read_json_objects", "read_ndjson", "read_ndjson_objects", "read_text", "read_blob", "glob",
    "sniff_csv", "parquet_metadata", "parquet_schema", "iceberg_scan", "delta_scan",
    "sqlite_scan", "postgres_scan", "mysql_scan", "read_xlsx", "st_read", "query_table",
    "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "lo_import", "lo_export",
    "dblink", "load_extension", "readfile", "writefile", "current_setting", "set_config",
    "getenv", "duckdb_secrets", "duckdb_settings", "pg_sleep", "pg_terminate_backend",
    "pg_cancel_backend", "pg_reload_conf", "pg_rotate_logfile", "pg_promote", "lo_unlink",
    "lo_from_bytea", "lo_put", "dblink_exec", "nextval", "setval",
}
MAIN_SCHEMAS = {"", "main", "public"}
SAFE_TABLE_FUNCTIONS = {"range", "generate_series", "unnest", "explode"}


class SQLRefused(ValueError):
    """A statement refused before execution; `signature` groups repeated failures."""

    def __init__(self, message: str, signature: str) -> None:
        super().__init__(message)
        self.signature = signature


@dataclass
class CheckedSQL:
    sql: str
    tree: exp.Expression
    qualified: exp.Expression | None
    is_write: bool


def clean_sql(sql: str) -> str:
    """Models sometimes wrap SQL in a Markdown fence inside the tool argument."""
    text = sql.strip()
    fenced = re.fullmatch(r"```[a-zA-Z]*\s*\n?(.*?)\n?```", text, flags=re.S)
    return (fenced.group(1) if fenced else text).strip()


def parse_one_statement(sql: str, dialect: str) -> exp.Expression:
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except SqlglotError as err:
        raise SQLRefused(f"the SQL does not parse in dialect {dialect}: {str(err)[:300]}", "parse_error") from err
    if len(statements) != 1:
        raise SQLRefused(f"submit exactly one statement (got {len(statements)})", "statement_count")
    return statements[0]


def normalize_sql(sql: str, dialect: str) -> str:
    """Canonical text for resubmission control: parsed and re-generated (keywords, identifier
    case, whitespace and comments normalized; literals kept)."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
        text = tree.sql(dialect=dialect, normalize=True, comments=False)
    except SqlglotError:
        text = sql
    # identifiers are case-folded by `normalize`; string literals keep their case
    return re.sub(r"\s+", " ", text).strip().rstrip(";")


def _statement_kind(tree: exp.Expression) -> str:
    return type(tree).__name__.upper()


def check_allowed(tree: exp.Expression, allow_write: bool) -> bool:
    """Returns whether the statement writes; raises SQLRefused if it is not allowed."""
    if isinstance(tree, READ_STATEMENTS) and not tree.find(exp.Into):
        return False
    if isinstance(tree, WRITE_STATEMENTS):
        if not allow_write:
            raise SQLRefused(
                f"{_statement_kind(tree)} is a write: this is an analytical question on a "
                "read-only connection; only SELECT queries are allowed",
                "write_refused",
            )
        if isinstance(tree, exp.Create) and tree.args.get("kind", "").upper() in ("DATABASE", "SCHEMA", "SECRET", "MACRO", "FUNCTION"):
            raise SQLRefused(f"CREATE {tree.args.get('kind')} is not allowed", "statement_refused")
        return True
    raise SQLRefused(
        f"statement type {_statement_kind(tree)} is not allowed (allowed: SELECT"
        + (", INSERT, UPDATE, DELETE, MERGE, CREATE TABLE/VIEW, DROP, ALTER" if allow_write else "")
        + ")",
        "statement_refused",
    )


def _function_name(node: exp.Expression) -> str:
    if isinstance(node, exp.Anonymous):
        return str(node.this).lower()
    return (node.sql_name() or type(node).__name__).lower()


def check_objects(tree: exp.Expression, tables: set[str]) -> None:
    """Only known tables, CTEs and harmless functions."""
    cte_names = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    known = {t.lower() for t in tables}
    for func in tree.find_all(exp.Func):
        name = _function_name(func)
        if name in FORBIDDEN_FUNCTIONS or isinstance(func, (exp.ReadCSV, exp.ReadParquet)):
            raise SQLRefused(f"function {name}() reads outside the database and is not allowed", "forbidden_function")
    for table in tree.find_all(exp.Table):
        if isinstance(table.this, exp.Func) and _function_name(table.this) in SAFE_TABLE_FUNCTIONS:
            continue  # number and date spines
        if not isinstance(table.this, exp.Identifier):
            raise SQLRefused(
                f"table source {table.this.sql()[:80]} is not a table of this warehouse "
                "(table functions and file paths are not allowed)",
                "forbidden_table",
            )
        if table.this.quoted and re.search(r"[/\\]|\.[a-z0-9]{2,8}$", table.name.lower()):
            raise SQLRefused(
                f"{table.name!r} looks like a file path: it is not a table of this warehouse",
                "forbidden_table",
            )
        schema = (table.db or "").lower()
        if table.catalog or schema not in MAIN_SCHEMAS:
            raise SQLRefused(
                f"{table.sql()} is outside the refined tables (staging, rejects and other "
                "schemas or catalogs are not available)",
                "forbidden_table",
            )
        name = table.name.lower()
        if name in cte_names:
            continue
        if name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=3, cutoff=0.4)
            hint = f"; closest tables: {', '.join(close)}" if close else ""
            raise SQLRefused(f"unknown table {table.name!r}{hint}", f"unknown_table:{name}")


def closest_columns(name: str, schema: dict[str, dict[str, str]], tables: list[str] | None = None) -> list[str]:
    pool = [
        f"{t}.{c}" for t, cols in schema.items() if not tables or t in tables for c in cols
    ]
    bare = {p.split(".", 1)[1]: p for p in pool}
    hits = difflib.get_close_matches(name.lower(), list(bare), n=3, cutoff=0.5)
    out = [bare[h] for h in hits]
    for p in pool:  # same name in another table
        if p.split(".", 1)[1] == name.lower() and p not in out:
            out.append(p)
    if not out:  # substring match (`rate` -> `hourly_rate`)
        out = [p for p in pool if name.lower() in p.split(".", 1)[1] or p.split(".", 1)[1] in name.lower()][:3]
    return out[:5]


def qualify_columns(tree: exp.Expression, schema: dict[str, dict[str, str]], dialect: str) -> exp.Expression:
    """Qualify every column; refuse unknown ones with the closest candidates."""
    used_tables = [t.name.lower() for t in tree.find_all(exp.Table)]
    try:
        return qualify(
            tree.copy(), schema=schema, dialect=dialect, validate_qualify_columns=True,
            quote_identifiers=False, identify=False, expand_stars=True,
        )
    except OptimizeError as err:
        message = str(err)
        match = re.search(r"Column '([^']+)' could not be resolved|Unknown column: (\S+)", message)
        column = (match.group(1) or match.group(2)) if match else ""
        column = column.split(".")[-1].strip('"')
        if column:
            close = closest_columns(column, schema, [t for t in used_tables if t in schema]) or closest_columns(column, schema)
            hint = f"; closest candidates: {', '.join(close)}" if close else ""
            raise SQLRefused(f"unknown column {column!r}{hint}", f"unknown_column:{column.lower()}") from err
        raise SQLRefused(f"the SQL does not resolve against the schema: {message[:300]}", "unresolved") from err


def check_sql(
    sql: str, dialect: str, schema: dict[str, dict[str, str]], allow_write: bool = False
) -> CheckedSQL:
    """Parse, allow-list, object check and column qualification, in that order."""
    tree = parse_one_statement(sql, dialect)
    is_write = check_allowed(tree, allow_write)
    check_objects(tree, set(schema) | _created_tables(tree))
    qualified = None
    if not is_write or isinstance(tree, (exp.Update, exp.Delete)):
        qualified = qualify_columns(tree, schema, dialect)
    return CheckedSQL(sql=sql, tree=tree, qualified=qualified, is_write=is_write)


def _created_tables(tree: exp.Expression) -> set[str]:
    if isinstance(tree, exp.Create):
        target = tree.this
        table = target.this if isinstance(target, exp.Schema) else target
        if isinstance(table, exp.Table):
            return {table.name.lower()}
    return set()
