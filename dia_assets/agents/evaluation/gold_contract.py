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

_OPS = [(exp.EQ, "="), (exp.NEQ, "<>"), (exp.GT, ">"), (exp.GTE, ">="), (exp.LT, "<"), (exp.LTE, "<="),
        (exp.Like, "like"), (exp.ILike, "ilike")]
_FLIP = {">": "<", "<": ">", ">=": "<=", "<=": ">="}


def _value(node: exp.Expression) -> Any:
    while isinstance(node, (exp.Cast, exp.Paren)) or type(node).__name__ in ("Date", "TsOrDsToDate"):
        node = node.this
    if isinstance(node, exp.Literal):
        if node.is_string:
            return node.name
        text = node.name
        try:
            return int(text)
        except ValueError:
            return float(text)
    if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
        v = _value(node.this)
        return -v if v is not None else None
    if isinstance(node, exp.Boolean):
        return node.this
    return None


def _column(node: exp.Expression) -> exp.Column | None:
    """The one column an operand reads (through functions), or None."""
    if isinstance(node, (exp.Subquery, exp.Select)) or node.find(exp.Select) is not None:
        return None
    cols = list(node.find_all(exp.Column))
    if len({(c.table.lower(), c.name.lower()) for c in cols}) != 1:
        return None
    return cols[0]


def _conjuncts(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.And):
        return _conjuncts(node.this) + _conjuncts(node.expression)
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    return [node]


def _qualified(col: exp.Column, tree: exp.Expression, ctes: set[str]) -> str | None:
    select = col.find_ancestor(exp.Select)
    if select is None:
        return None
    sources = {}
    for t in select.find_all(exp.Table):
        if t.find_ancestor(exp.Select) is select:
            sources[t.alias_or_name.lower()] = t.name
    derived = [q for q in select.find_all(exp.Subquery)
               if q.find_ancestor(exp.Select) is select and isinstance(q.parent, (exp.From, exp.Join))]
    if col.table:
        table = sources.get(col.table.lower())
    elif len(sources) == 1 and not derived:
        table = next(iter(sources.values()))
    else:
        return col.name if not ctes and not derived and sources else None
    if table is None or table.lower() in ctes:
        return None
    return f"{table}.{col.name}"


def _filter(pred: exp.Expression, tree: exp.Expression, ctes: set[str]) -> dict[str, Any] | None:
    negated = isinstance(pred, exp.Not)
    inner = pred.this if negated else pred
    if isinstance(inner, exp.Paren):
        inner = inner.this
    col, op, value = None, None, None
    if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
        col, op = _column(inner.this), ("is not null" if negated else "is null")
    elif isinstance(inner, exp.In) and not inner.args.get("query"):
        values = [_value(v) for v in inner.expressions]
        if values and all(v is not None for v in values):
            col, op, value = _column(inner.this), ("not in" if negated else "in"), values
    elif isinstance(inner, exp.Between) and not negated:
        low, high = _value(inner.args["low"]), _value(inner.args["high"])
        if low is not None and high is not None:
            col, op, value = _column(inner.this), "between", [low, high]
    elif not negated:
        for cls, name in _OPS:
            if type(inner) is cls:
                left, right = _value(inner.expression), _value(inner.this)
                if left is not None and right is None:
                    col, op, value = _column(inner.this), name, left
                elif right is not None and left is None:
                    col, op, value = _column(inner.expression), _FLIP.get(name, name), right
                break
    if col is None or op is None:
        return None
    name = _qualified(col, tree, ctes)
    if name is None:
        return None
    shown = value if value is not None else ""
    return {"description": f"{col.name} {op} {shown}".strip()[:60], "column": name, "op": op, "value": value}


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
        v = _value(limit.args.get("expression") or limit.this)
        if isinstance(v, int):
            base["limit"] = v
    seen = set()
    for where in tree.find_all(exp.Where):
        for pred in _conjuncts(where.this):
            flt = _filter(pred, tree, ctes)
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
            name = _qualified(cols[0], tree, ctes) if len(cols) == 1 else None
            distinct.add(name)
        else:
            plain_count = True
    if len(distinct) == 1 and None not in distinct and not plain_count:
        base["entity_key"] = next(iter(distinct))
    return base
