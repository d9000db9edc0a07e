"""The static check every model-influenced SQL string passes before it runs (DESIGN §8).

An allow-list, not a deny-list:

1. It parses in the warehouse's dialect (sqlglot), one statement only.
2. Statements: SELECT and set operations on the analytical path, and nothing anywhere in
   the tree (CTE, subquery) that writes, locks, copies, attaches, sets, loads or runs a
   command. INSERT, UPDATE, DELETE, MERGE, CREATE/DROP/ALTER TABLE, VIEW or INDEX only as
   the root of a declared modification's statement, with nothing else writing inside it.
3. Functions: sqlglot's typed function classes except those that disclose the environment
   (`allowlist.DENIED_TYPED`), and unknown (anonymous) functions only by a vetted name per
   dialect. Names are normalised first (quotes removed, Unicode NFKC, case folded), and a
   schema qualifier other than the engine's built-in one is refused, so
   `"pg_catalog"."pg_read_file"(...)` and `"current_setting"(...)` are both refused.
4. Tables: the warehouse's refined tables, CTEs and number/date spines only: no table
   functions, file paths, catalogs, `information_schema`, `pg_catalog` or other schemas.
5. Every column is qualified against the schema (sqlglot `qualify`); an unknown column is
   refused, with the closest candidates, before execution.

The statement that runs is the one sqlglot regenerated from the checked tree, never the
raw text, so a comment or quoting trick the engine reads differently cannot slip through.
The least-privileged connection is the second line of defence (see dialects.py), and
`gate.py` is the one door that puts the two together.
"""

from __future__ import annotations

import difflib
import re
import unicodedata
from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, SqlglotError
from sqlglot.optimizer.qualify import qualify

from dia_assets.agents.query.allowlist import (
    ANONYMOUS,
    ANONYMOUS_TABLE_FUNCTIONS,
    BUILTIN_SCHEMAS,
    DENIED_TYPED,
    TABLE_FUNCTIONS,
)

READ_STATEMENTS: tuple[type[exp.Expression], ...] = (exp.Select, exp.SetOperation)
WRITE_STATEMENTS: tuple[type[exp.Expression], ...] = (
    exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter,
)
WRITE_KINDS = {"TABLE", "VIEW", "INDEX"}
# Nodes that write, lock, leave the database or change the session: never inside a
# statement (a modification's own root is the one exception).
FORBIDDEN_NODES: tuple[type[exp.Expression], ...] = (
    *WRITE_STATEMENTS, exp.Into, exp.Lock, exp.Command, exp.Copy, exp.Set, exp.Pragma,
    exp.Attach, exp.Detach, exp.Use, exp.TruncateTable, exp.Transaction, exp.Commit,
    exp.Rollback, exp.Grant, exp.Revoke, exp.Install, exp.LoadData, exp.Refresh, exp.Analyze,
    exp.Export, exp.Cache, exp.Uncache, exp.Describe, exp.Show, exp.Summarize, exp.Kill,
    exp.Comment, exp.Declare, exp.Execute, exp.SessionParameter,
)
MAIN_SCHEMAS = {"", "main", "public"}


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
    text: str = ""  # what runs: regenerated from the checked tree

    @property
    def written_tables(self) -> set[str]:
        return written_tables(self.tree) if self.is_write else set()


def normalize_name(name: str) -> str:
    """One spelling per identifier: quotes gone, Unicode look-alikes folded (NFKC), lower case."""
    return unicodedata.normalize("NFKC", str(name)).strip().strip('"`[]').casefold()


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
    is_write = isinstance(tree, WRITE_STATEMENTS)
    if isinstance(tree, READ_STATEMENTS):
        pass
    elif is_write:
        if not allow_write:
            raise SQLRefused(
                f"{_statement_kind(tree)} is a write: this is an analytical question on a "
                "read-only connection; only SELECT queries are allowed",
                "write_refused",
            )
        kind = str(tree.args.get("kind") or "TABLE").upper()
        if isinstance(tree, (exp.Create, exp.Drop, exp.Alter)) and kind not in WRITE_KINDS:
            raise SQLRefused(f"{_statement_kind(tree)} {kind} is not allowed", "statement_refused")
    else:
        raise SQLRefused(
            f"statement type {_statement_kind(tree)} is not allowed (allowed: SELECT"
            + (", INSERT, UPDATE, DELETE, MERGE, CREATE/DROP/ALTER TABLE or VIEW" if allow_write else "")
            + ")",
            "statement_refused",
        )
    for node in tree.walk():
        if node is tree or not isinstance(node, FORBIDDEN_NODES):
            continue
        if isinstance(node, WRITE_STATEMENTS):
            raise SQLRefused(
                f"a {_statement_kind(node)} nested inside the statement (CTE or subquery) "
                "modifies data and is not allowed", "write_refused",
            )
        raise SQLRefused(f"{_statement_kind(node)} is not allowed inside a statement", "statement_refused")
    return is_write


def _function_name(node: exp.Func) -> str:
    if isinstance(node, exp.Anonymous):
        return normalize_name(node.name)
    return (node.sql_name() or type(node).__name__).lower()


def check_functions(tree: exp.Expression, dialect: str) -> None:
    """Typed functions unless denied; anonymous ones only by a vetted name."""
    vetted = ANONYMOUS.get(dialect, ANONYMOUS["duckdb"])
    for func in tree.find_all(exp.Func):
        name = _function_name(func)
        parent = func.parent
        if isinstance(parent, exp.Dot) and parent.expression is func:
            qualifier = normalize_name(parent.this.sql(dialect=dialect) if not isinstance(parent.this, exp.Identifier)
                                       else parent.this.name)
            if qualifier not in BUILTIN_SCHEMAS:
                raise SQLRefused(f"function {qualifier}.{name}() is not allowed (no schema-qualified "
                                 "functions)", "forbidden_function")
        if type(func) in DENIED_TYPED:
            raise SQLRefused(f"function {name}() discloses the environment or reads outside the "
                             "database and is not allowed", "forbidden_function")
        if isinstance(func, exp.Anonymous) and name not in vetted:
            if isinstance(parent, exp.Table) and name in ANONYMOUS_TABLE_FUNCTIONS:
                continue
            raise SQLRefused(f"function {name}() is not allowed: it is not on this warehouse's allow-list "
                             "(anything that reads outside the database or discloses settings, the "
                             "catalog or the server is refused)", "forbidden_function")
    for dtype in tree.find_all(exp.DataType):
        if normalize_name(dtype.sql(dialect=dialect)).startswith("reg"):
            raise SQLRefused(f"cast to {dtype.sql()} reads the catalog and is not allowed", "forbidden_function")


def check_objects(tree: exp.Expression, tables: set[str], dialect: str = "duckdb") -> None:
    """Only allowed functions, and known tables or CTEs."""
    check_functions(tree, dialect)
    cte_names = {normalize_name(cte.alias_or_name) for cte in tree.find_all(exp.CTE)}
    known = {normalize_name(t) for t in tables}
    for table in tree.find_all(exp.Table):
        source = table.this
        if isinstance(source, exp.Func):
            if isinstance(source, TABLE_FUNCTIONS) or (
                isinstance(source, exp.Anonymous) and normalize_name(source.name) in ANONYMOUS_TABLE_FUNCTIONS
            ):
                continue  # number and date spines
            raise SQLRefused(
                f"table source {source.sql()[:80]} is not a table of this warehouse "
                "(table functions and file paths are not allowed)",
                "forbidden_table",
            )
        if not isinstance(source, exp.Identifier):
            raise SQLRefused(
                f"table source {source.sql()[:80]} is not a table of this warehouse "
                "(table functions and file paths are not allowed)",
                "forbidden_table",
            )
        name = normalize_name(table.name)
        if re.search(r"[/\\]|\.[a-z0-9]{2,8}$|^(?:https?|s3|gs|file):", name):
            raise SQLRefused(
                f"{table.name!r} looks like a file path: it is not a table of this warehouse",
                "forbidden_table",
            )
        schema = normalize_name(table.db or "")
        if table.catalog or schema not in MAIN_SCHEMAS:
            raise SQLRefused(
                f"{table.sql()} is outside the refined tables (staging, rejects, catalogs, "
                "information_schema and other schemas are not available)",
                "forbidden_table",
            )
        if name in cte_names and not schema:
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
    """Parse, statement allow-list, function and object allow-list, column qualification."""
    tree = parse_one_statement(sql, dialect)
    is_write = check_allowed(tree, allow_write)
    check_objects(tree, set(schema) | _created_tables(tree), dialect)
    qualified = None
    if not is_write or isinstance(tree, (exp.Update, exp.Delete)):
        qualified = qualify_columns(tree, schema, dialect)
    text = tree.sql(dialect=dialect, comments=False)
    return CheckedSQL(sql=sql, tree=tree, qualified=qualified, is_write=is_write, text=text)


def _created_tables(tree: exp.Expression) -> set[str]:
    if isinstance(tree, exp.Create):
        target = tree.this
        table = target.this if isinstance(target, exp.Schema) else target
        if isinstance(table, exp.Table):
            return {table.name.lower()}
    return set()


def written_tables(tree: exp.Expression) -> set[str]:
    """The objects a modification statement writes (its target), normalised."""
    target = tree.this
    if isinstance(tree, exp.Merge) or isinstance(target, exp.Schema):
        target = target.this if isinstance(target, exp.Schema) else target
    if isinstance(tree, exp.Create) and str(tree.args.get("kind") or "").upper() == "INDEX":
        # CREATE INDEX i ON t (...): the table is the one written
        table = tree.find(exp.Table)
        return {normalize_name(table.name)} if table is not None else set()
    if isinstance(target, exp.Table):
        return {normalize_name(target.name)}
    return {normalize_name(t.name) for t in tree.find_all(exp.Table)}
