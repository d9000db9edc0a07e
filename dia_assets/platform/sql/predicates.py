"""Reading WHERE predicates: the conjuncts of a condition and the literal filters among them
(`col op literal`, seen through functions and casts). Shared by the agent (preference probes)
and the evaluation (gold contracts, mutants)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp


@dataclass(frozen=True)
class Comparison:
    """One comparison kind, in the one table every reader of predicates shares: the agent's
    verifier (a declared filter against the SQL's WHERE), the literal filters of a contract,
    the gold contracts and the mutants."""

    kind: str  # normalised: the verifier compares kinds
    spellings: tuple[str, ...] = ()  # how a contract may write it ("gte", ">=", ...)
    nodes: tuple[tuple[type[exp.Expression], str], ...] = ()  # sqlglot node -> its SQL symbol
    mirror: str | None = None  # the kind with the operands swapped (`5 < x` is `x > 5`)
    negation: str | None = None  # the kind under NOT
    boundary: str | None = None  # the kind a mutant swaps it for (> to >=, = to <>)


COMPARISONS: tuple[Comparison, ...] = (
    Comparison("eq", ("=", "==", "eq", "in", "equals"), ((exp.EQ, "="), (exp.In, "in")), negation="ne",
               boundary="ne"),
    Comparison("ne", ("<>", "!=", "ne", "not in", "not_in"), ((exp.NEQ, "<>"),), negation="eq",
               boundary="eq"),
    Comparison("gt", (">", "gt"), ((exp.GT, ">"),), mirror="lt", negation="le", boundary="ge"),
    Comparison("ge", (">=", "gte", "ge"), ((exp.GTE, ">="),), mirror="le", negation="lt", boundary="gt"),
    Comparison("lt", ("<", "lt"), ((exp.LT, "<"),), mirror="gt", negation="ge", boundary="le"),
    Comparison("le", ("<=", "lte", "le"), ((exp.LTE, "<="),), mirror="ge", negation="gt", boundary="lt"),
    Comparison("like", ("like", "ilike"), ((exp.Like, "like"), (exp.ILike, "ilike")), negation="nlike"),
    Comparison("nlike", ("not like",)),
    Comparison("between", ("between",), ((exp.Between, "between"),)),
    Comparison("null", ("is null",), negation="notnull"),
    Comparison("notnull", ("is not null",), negation="null"),
)

SPELLINGS = {spelling: c.kind for c in COMPARISONS for spelling in c.spellings}
NODE_KINDS = [(node, c.kind) for c in COMPARISONS for node, _ in c.nodes]  # in table order
MIRRORED = {c.kind: c.mirror for c in COMPARISONS if c.mirror}
NEGATED = {c.kind: c.negation for c in COMPARISONS if c.negation}
_BY_KIND = {c.kind: c for c in COMPARISONS}


def _first_node(kind: str) -> tuple[type[exp.Expression], str]:
    return _BY_KIND[kind].nodes[0]


# literal filters read binary comparisons (IN and BETWEEN have their own branches)
_OPS = [(node, symbol) for c in COMPARISONS for node, symbol in c.nodes if issubclass(node, exp.Binary)]
_FLIP = {_first_node(c.kind)[1]: _first_node(c.mirror)[1] for c in COMPARISONS if c.mirror}
_BOUNDARY = {_first_node(c.kind)[0]: _first_node(c.boundary)[0] for c in COMPARISONS if c.boundary}


def boundary_swap(node: exp.Expression) -> type[exp.Expression] | None:
    """The comparison a mutant puts in place of `node` (> and >=, < and <=, = and <>), or None."""
    return _BOUNDARY.get(type(node))


def literal_value(node: exp.Expression) -> Any:
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
        v = literal_value(node.this)
        return -v if v is not None else None
    if isinstance(node, exp.Boolean):
        return node.this
    return None


def sole_column(node: exp.Expression) -> exp.Column | None:
    """The one column an operand reads (through functions), or None."""
    if isinstance(node, (exp.Subquery, exp.Select)) or node.find(exp.Select) is not None:
        return None
    cols = list(node.find_all(exp.Column))
    if len({(c.table.lower(), c.name.lower()) for c in cols}) != 1:
        return None
    return cols[0]


def conjuncts(node: exp.Expression) -> list[exp.Expression]:
    if isinstance(node, exp.And):
        return conjuncts(node.this) + conjuncts(node.expression)
    if isinstance(node, exp.Paren):
        return conjuncts(node.this)
    return [node]


def qualified_column(col: exp.Column, tree: exp.Expression, ctes: set[str]) -> str | None:
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


def negated(pred: exp.Expression) -> bool:
    """Whether a predicate is negated: `NOT p` around it, or sqlglot's own `negate` flag
    (how it reads `x NOT LIKE y` everywhere and `x IS NOT NULL` in PostgreSQL)."""
    parent = pred.parent
    while isinstance(parent, exp.Paren):
        parent = parent.parent
    return isinstance(parent, exp.Not) != bool(pred.args.get("negate"))


def literal_filter(pred: exp.Expression, tree: exp.Expression, ctes: set[str]) -> dict[str, Any] | None:
    inner = pred.this if isinstance(pred, exp.Not) else pred
    if isinstance(inner, exp.Paren):
        inner = inner.this
    neg = isinstance(pred, exp.Not) != bool(inner.args.get("negate"))
    col, op, value = None, None, None
    if isinstance(inner, exp.Is) and isinstance(inner.expression, exp.Null):
        col, op = sole_column(inner.this), ("is not null" if neg else "is null")
    elif isinstance(inner, exp.In) and not inner.args.get("query"):
        values = [literal_value(v) for v in inner.expressions]
        if values and all(v is not None for v in values):
            col, op, value = sole_column(inner.this), ("not in" if neg else "in"), values
    elif isinstance(inner, exp.Between) and not neg:
        low, high = literal_value(inner.args["low"]), literal_value(inner.args["high"])
        if low is not None and high is not None:
            col, op, value = sole_column(inner.this), "between", [low, high]
    elif not neg:
        for cls, name in _OPS:
            if type(inner) is cls:
                left, right = literal_value(inner.expression), literal_value(inner.this)
                if left is not None and right is None:
                    col, op, value = sole_column(inner.this), name, left
                elif right is not None and left is None:
                    col, op, value = sole_column(inner.expression), _FLIP.get(name, name), right
                break
    if col is None or op is None:
        return None
    name = qualified_column(col, tree, ctes)
    if name is None:
        return None
    shown = value if value is not None else ""
    return {"description": f"{col.name} {op} {shown}".strip()[:60], "column": name, "op": op, "value": value}
