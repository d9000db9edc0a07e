"""Column lineage of an answer's SQL (sqlglot): each result column -> warehouse columns."""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.lineage import lineage


def column_lineage(sql: str, schema: dict[str, dict[str, str]], dialect: str) -> dict[str, list[str]]:
    """{output column: ["table.column", ...]}; empty for a column sqlglot cannot trace."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.SqlglotError:
        return {}
    if not isinstance(tree, (exp.Select, exp.Union)):
        return {}
    out: dict[str, list[str]] = {}
    for name in tree.named_selects:
        try:
            node = lineage(name, tree, schema=schema, dialect=dialect)
        except Exception:  # noqa: BLE001 - lineage is best effort
            out[name] = []
            continue
        sources: list[str] = []
        for n in node.walk():
            if isinstance(n.source, exp.Table) and not n.downstream:
                column = n.name.split(".")[-1]
                ref = f"{n.source.name}.{column}"
                if column != "*" and n.source.name.lower() in schema and ref not in sources:
                    sources.append(ref)
        out[name] = sources
    return out
