"""The output contract a gold query answers (what its question asks), read off the gold SQL:
the oracle declares it, and the verifier bench submits mutants against it.

- columns: the gold result's columns;
- granularity keys: the outer GROUP BY items the result shows (all of them, or none), or every
  column of a SELECT DISTINCT;
- order: the outer ORDER BY items the result shows (the prefix that maps to result columns);
- limit: the outer LIMIT;
- filters: every WHERE conjunct (any select) comparing one column with literals:
  `=, <>, <, <=, >, >=, IN, BETWEEN, LIKE, IS [NOT] NULL`, the column seen through
  functions (`lower(trim(status)) = 'done'` declares status = 'done');
- entity_key: the key of a `COUNT(DISTINCT t.col)` when it is the only count kind the query uses.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp

from dia_assets.platform.sql.predicates import (
    conjuncts,
    literal_filter,
    literal_value,
    qualified_column,
)


def _output_name(node: exp.Expression, select: exp.Select, columns: list[str]) -> str | None:
    lower = [c.lower() for c in columns]
    if isinstance(node, exp.Literal) and node.is_int:
        i = int(node.name) - 1
        return columns[i] if 0 <= i < len(columns) else None
    if isinstance(node, exp.Column) and node.name.lower() in lower:
        return columns[lower.index(node.name.lower())]
    for i, p in enumerate(select.expressions):  # an expression the select shows under an alias
        if i < len(columns) and isinstance(p, exp.Alias) and p.this == node:
            return columns[i]
    return None


def gold_contract(sql: str, dialect: str, columns: list[str], allow_empty: bool = False) -> dict[str, Any]:
    """The declare_contract arguments for a gold query (see the module docstring)."""
    base: dict[str, Any] = {
        "kind": "analytical", "columns": list(columns),
        "granularity": {"description": "the rows the gold query returns", "key_columns": []},
        "order": [], "filters": [], "allow_empty": allow_empty,
    }
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.SqlglotError:
        return base
    if not isinstance(tree, exp.Select):
        return base
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    group = tree.args.get("group")
    if group is not None and not any(isinstance(p, exp.Star) for p in tree.expressions):
        keys = [_output_name(g, tree, columns) for g in group.expressions]
        if keys and all(keys):
            base["granularity"]["key_columns"] = list(dict.fromkeys(k for k in keys if k))
    elif tree.args.get("distinct") is not None:
        base["granularity"]["key_columns"] = list(columns)
    order = tree.args.get("order")
    if order is not None:
        for item in order.expressions:
            name = _output_name(item.this, tree, columns)
            if name is None:
                break
            base["order"].append({"column": name, "direction": "desc" if item.args.get("desc") else "asc"})
    limit = tree.args.get("limit")
    if limit is not None:
        v = literal_value(limit.args.get("expression") or limit.this)
        if isinstance(v, int):
            base["limit"] = v
    seen = set()
    for where in tree.find_all(exp.Where):
        for pred in conjuncts(where.this):
            flt = literal_filter(pred, tree, ctes)
            if flt is not None:
                key = (flt["column"].lower(), flt["op"], repr(flt["value"]))
                if key not in seen:
                    seen.add(key)
                    base["filters"].append(flt)
    distinct = set()
    plain_count = False
    for count in tree.find_all(exp.Count):
        if isinstance(count.this, exp.Distinct):
            cols = list(count.this.find_all(exp.Column))
            name = qualified_column(cols[0], tree, ctes) if len(cols) == 1 else None
            distinct.add(name)
        else:
            plain_count = True
    if len(distinct) == 1 and None not in distinct and not plain_count:
        base["entity_key"] = next(iter(distinct))
    return base
