"""What an answer's SQL reads: every warehouse table and column it touches, in SELECT, JOIN,
WHERE, GROUP BY or ORDER BY alike (sqlglot scopes), not only the columns it outputs."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import traverse_scope


def sql_reads(sql: str, schema: dict[str, dict[str, str]], dialect: str = "duckdb") -> dict[str, list[str]]:
    """{table: [columns read]} for the warehouse tables in `schema` ({table: {column: type}},
    lower case). A table read only through COUNT(*) maps to []. Unparseable SQL reads nothing
    we can name: {}."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
        tree = qualify(tree, schema=schema, dialect=dialect, validate_qualify_columns=False)
    except (sqlglot.errors.SqlglotError, ValueError, KeyError):
        return {}
    reads: dict[str, set[str]] = {}
    for scope in traverse_scope(tree):
        for source in scope.sources.values():
            if isinstance(source, exp.Table) and source.name.lower() in schema:
                reads.setdefault(source.name.lower(), set())
        for column in scope.columns:
            source = scope.sources.get(column.table)
            if isinstance(source, exp.Table) and source.name.lower() in schema:
                name = column.name.lower()
                if name in schema[source.name.lower()]:
                    reads[source.name.lower()].add(name)
    return {table: sorted(cols) for table, cols in sorted(reads.items())}


def flat(reads: dict[str, list[str]]) -> list[str]:
    """["table.column", ...] from sql_reads."""
    return [f"{t}.{c}" for t, cols in reads.items() for c in cols]
