"""Which saved answers a change touches, found on their SQL with sqlglot."""

from __future__ import annotations

import sqlglot
from sqlglot import exp


def touched(sql: str, dialect: str = "duckdb") -> tuple[set[str], set[tuple[str | None, str]]]:
    """Tables and (table alias or None, column) pairs a query reads."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.ParseError:
        return set(), set()
    tables = {t.name.lower() for t in tree.find_all(exp.Table)}
    columns = {(c.table.lower() or None, c.name.lower()) for c in tree.find_all(exp.Column)}
    return tables, columns


def affected_partitions(
    queries: dict[str, str], affected: dict[str, set[str] | None], dialect: str = "duckdb"
) -> list[str]:
    """Partitions whose SQL reads an affected table (None: any column) or an affected column."""
    hits = []
    for partition, sql in sorted(queries.items()):
        tables, columns = touched(sql, dialect)
        for table, cols in affected.items():
            if table.lower() not in tables:
                continue
            if cols is None or any(name in {c.lower() for c in cols} for _, name in columns):
                hits.append(partition)
                break
    return hits
