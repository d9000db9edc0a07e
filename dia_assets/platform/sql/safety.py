"""The static check every model-influenced SQL string passes before it runs (DESIGN §8).

An allow-list, not a deny-list:

1. It parses in the warehouse's dialect (sqlglot), one statement only.
2. Statements: SELECT and set operations on the analytical path, and nothing anywhere in
   the tree (CTE, subquery) that writes, locks, copies, attaches, sets, loads or runs a
   command. INSERT, UPDATE, DELETE, MERGE, CREATE/DROP/ALTER TABLE, VIEW or INDEX only as
   the root of a declared modification's statement, with nothing else writing inside it.
3. Functions: sqlglot's typed function classes except those that disclose the environment
   (`allowlist.DENIED_TYPED`), and unknown (anonymous) functions only by a vetted name per
   dialect (`allowlist/<dialect>.py`). A dialect without an allow-list module is refused. Names are normalised first (quotes removed, Unicode NFKC, case folded), and a
   schema qualifier other than the engine's built-in one is refused, so
   `"pg_catalog"."pg_read_file"(...)` and `"current_setting"(...)` are both refused.
4. Types: every type a cast (`CAST`, `TRY_CAST`, `::`, `type 'literal'`) or definition names
   is on the dialect's list (`allowlist/<dialect>.py TYPES`), however it is quoted or qualified, so
   `CAST(n AS oid)`, `x::"regclass"` and `pg_catalog.regnamespace` are refused.
5. Tables: the warehouse's refined tables, CTEs and number/date spines only: no table
   functions, file paths, catalogs, `information_schema`, `pg_catalog` or other schemas.
   System columns (`ctid`, `xmin`, `tableoid`, `rowid`, ...) only where a table really has one.
6. Every column is qualified against the schema (sqlglot `qualify`); an unknown column is
   refused, with the closest candidates, before execution.

A statement the checker cannot finish (too long, too deep, a construct sqlglot trips over) is
refused with "could not check this statement", never passed on as an exception's text.

The statement that runs is the one sqlglot regenerated from the checked tree, never the
raw text, so a comment or quoting trick the engine reads differently cannot slip through.
The least-privileged connection is the second line of defence (platform/warehouse/), and
`gate.py` is the one door that puts the two together.
"""

from __future__ import annotations

import difflib
import functools
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import ParamSpec, TypeVar

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, SqlglotError
from sqlglot.optimizer.qualify import qualify

from dia_assets.platform.sql.allowlist import (
    ANONYMOUS_TABLE_FUNCTIONS,
    BUILTIN_SCHEMAS,
    DENIED_TYPED,
    TABLE_FUNCTIONS,
    AllowList,
    NoAllowList,
    for_dialect,
)
from dia_assets.platform.sql.text import (  # noqa: F401 - the gate's names for them
    MAX_SQL_CHARS,
    clean_sql,
    normalize_name,
    normalize_sql,
)

log = logging.getLogger(__name__)

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
# Bounds on what the checker takes on: sqlglot's parser and optimizer recurse and some of
# their passes grow faster than the tree, so a giant statement would stall or crash the gate.
MAX_NODES = 10_000
MAX_DEPTH = 200
UNCHECKED = "refused: could not check this statement ({}); write it more simply"


class SQLRefused(ValueError):
    """A statement refused before execution; `signature` groups repeated failures."""

    def __init__(self, message: str, signature: str) -> None:
        super().__init__(message)
        self.signature = signature


P = ParamSpec("P")
R = TypeVar("R")


def guarded(check: Callable[P, R]) -> Callable[P, R]:
    """Whatever goes wrong inside a check is a refusal: the model never gets exception text."""
    @functools.wraps(check)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return check(*args, **kwargs)
        except SQLRefused:
            raise
        except RecursionError as err:
            raise SQLRefused(UNCHECKED.format("it is nested too deeply"), "unchecked") from err
        except Exception as err:
            log.warning("the SQL gate could not check a statement", exc_info=True)
            raise SQLRefused(UNCHECKED.format("it uses a construct the checker does not support"),
                             "unchecked") from err
    return run


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


def parse_one_statement(sql: str, dialect: str) -> exp.Expression:
    if len(sql) > MAX_SQL_CHARS:
        raise SQLRefused(UNCHECKED.format(f"{len(sql):,} characters; the limit is {MAX_SQL_CHARS:,}"),
                         "too_complex")
    try:
        statements = [s for s in sqlglot.parse(sql, read=dialect) if s is not None]
    except SqlglotError as err:
        raise SQLRefused(f"the SQL does not parse in dialect {dialect}: {str(err)[:300]}", "parse_error") from err
    if len(statements) != 1:
        raise SQLRefused(f"submit exactly one statement (got {len(statements)})", "statement_count")
    return statements[0]


def allow_list(dialect: str) -> AllowList:
    """The dialect's vetted lists; a dialect nobody vetted is refused (no other engine's lists)."""
    try:
        return for_dialect(dialect)
    except NoAllowList as err:
        raise SQLRefused(str(err), "unknown_dialect") from None


def check_size(tree: exp.Expression) -> None:
    """Refuse a tree too large or too deep to check in bounded time and stack."""
    count, stack = 0, [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        count += 1
        if depth > MAX_DEPTH:
            raise SQLRefused(UNCHECKED.format(f"it is nested more than {MAX_DEPTH} levels deep"), "too_complex")
        if count > MAX_NODES:
            raise SQLRefused(UNCHECKED.format(f"it has more than {MAX_NODES:,} parts"), "too_complex")
        stack.extend((child, depth + 1) for child in node.iter_expressions())


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


def check_functions(tree: exp.Expression, dialect: str,
                    also_allowed: frozenset[type[exp.Expression]] = frozenset()) -> None:
    """Typed functions unless denied (or named in `also_allowed`, a caller's own exception such
    as `sqlite_version()` when scoring other systems' SQL); anonymous ones only by a vetted name."""
    vetted = allow_list(dialect).anonymous
    for func in tree.find_all(exp.Func):
        name = _function_name(func)
        parent = func.parent
        if isinstance(parent, exp.Dot) and parent.expression is func:
            qualifier = normalize_name(parent.this.sql(dialect=dialect) if not isinstance(parent.this, exp.Identifier)
                                       else parent.this.name)
            if qualifier not in BUILTIN_SCHEMAS:
                raise SQLRefused(f"function {qualifier}.{name}() is not allowed (no schema-qualified "
                                 "functions)", "forbidden_function")
        if type(func) in DENIED_TYPED and type(func) not in also_allowed:
            raise SQLRefused(f"function {name}() discloses the environment or reads outside the "
                             "database and is not allowed", "forbidden_function")
        if isinstance(func, exp.Anonymous) and name not in vetted:
            if isinstance(parent, exp.Table) and name in ANONYMOUS_TABLE_FUNCTIONS:
                continue
            raise SQLRefused(f"function {name}() is not allowed: it is not on this warehouse's allow-list "
                             "(anything that reads outside the database or discloses settings, the "
                             "catalog or the server is refused)", "forbidden_function")


_TYPE_NAME = re.compile(r"[a-z_][a-z0-9_ ]*")


def _canonical_type(dtype: exp.DataType, dialect: str) -> tuple[str, exp.DataType]:
    """(name, type) with a user-written name resolved: quotes, case and the built-in schema
    qualifier go (`"pg_catalog"."INT4"` is INT); anything else stays user-defined."""
    if dtype.this != exp.DataType.Type.USERDEFINED:
        return str(getattr(dtype.this, "name", dtype.this)).lower(), dtype
    parts = [normalize_name(p) for p in str(dtype.args.get("kind") or "").split(".")]
    name = ".".join(parts)
    if all(p in BUILTIN_SCHEMAS for p in parts[:-1]) and _TYPE_NAME.fullmatch(parts[-1]):
        name = parts[-1]
        try:
            built = sqlglot.parse_one(f"CAST(NULL AS {name})", read=dialect).args["to"]
        except SqlglotError:
            return name, dtype
        if built.this != exp.DataType.Type.USERDEFINED:
            if dtype.expressions:  # numeric(10, 2), varchar(3): the parameters stay
                built.set("expressions", [e.copy() for e in dtype.expressions])
            return name, built
    return name, dtype


def check_types(tree: exp.Expression, dialect: str) -> None:
    """Every type named anywhere (casts, typed literals, definitions, nested element types) is
    on the dialect's list; a qualified or quoted spelling of a listed type is rewritten to the
    plain one, so what runs names only listed types."""
    allowed = allow_list(dialect).types
    for dtype in list(tree.find_all(exp.DataType)):
        if isinstance(dtype, exp.IntervalSpan):  # INTERVAL '1' DAY TO HOUR: a unit, not a type
            continue
        name, canonical = _canonical_type(dtype, dialect)
        if type(canonical) is not exp.DataType or canonical.this not in allowed:
            raise SQLRefused(
                f"type {name or '(no name)'} is not allowed: casts and definitions may name only this "
                "warehouse's data types (numbers, text, booleans, dates and times, intervals, JSON, UUID, arrays); "
                "object identifiers such as oid or regclass read the catalog, and system, pseudo and "
                "user-defined types are refused", "forbidden_type",
            )
        if canonical is not dtype:
            dtype.replace(canonical)


def check_system_columns(tree: exp.Expression, schema: dict[str, dict[str, str]], dialect: str) -> None:
    """Row addresses, transaction ids and `tableoid` are not data: refused unless a table of the
    warehouse has a real column by that name."""
    real = {normalize_name(c) for cols in schema.values() for c in cols}
    hidden = allow_list(dialect).system_columns - real
    for node in tree.find_all(exp.Column, exp.Dot):
        name = normalize_name(node.name)
        if name in hidden:
            raise SQLRefused(f"{name} is a system column, not data of this warehouse, and is not allowed",
                             "forbidden_column")


@guarded
def check_static(sql: str, dialect: str, allow_write: bool = False,
                 also_allowed: frozenset[type[exp.Expression]] = frozenset()) -> tuple[exp.Expression, bool]:
    """The checks that need no schema: one statement of bounded size, allowed statement
    kinds, functions and types. Returns the tree and whether it writes."""
    allow_list(dialect)  # before parsing: an unvetted dialect is refused whatever the SQL
    tree = parse_one_statement(sql, dialect)
    check_size(tree)
    is_write = check_allowed(tree, allow_write)
    check_functions(tree, dialect, also_allowed)
    check_types(tree, dialect)
    return tree, is_write


def check_objects(tree: exp.Expression, tables: set[str], dialect: str = "duckdb") -> None:
    """Only known tables, CTEs and number/date spines."""
    cte_names = {normalize_name(cte.alias_or_name) for cte in tree.find_all(exp.CTE)}
    known = {normalize_name(t) for t in tables}
    for table in tree.find_all(exp.Table):
        source = table.this
        if source is None and table.args.get("rows_from"):
            continue  # ROWS FROM (f(...), g(...)): each function is a table of its own, checked here too
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
                f"table source {table.sql()[:80]} is not a table of this warehouse "
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


@guarded
def check_sql(
    sql: str, dialect: str, schema: dict[str, dict[str, str]], allow_write: bool = False,
    also_allowed: frozenset[type[exp.Expression]] = frozenset(),
) -> CheckedSQL:
    """Parse, statement, function and type allow-lists, tables, column qualification."""
    tree, is_write = check_static(sql, dialect, allow_write, also_allowed)
    check_objects(tree, set(schema) | _created_tables(tree), dialect)
    check_system_columns(tree, schema, dialect)
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
