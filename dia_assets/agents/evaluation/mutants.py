"""SQL mutants of a gold query, by class, for measuring how much self-verification catches.

Each mutant is one small, plausible mistake (the kind a model makes), written on the sqlglot
tree. `covered` says whether the mistake falls in a part of the shape the contract declares
(granularity, order, a declared filter, fan-out), so detection can be reported for the
contract's own classes and overall.

Classes: dropped_filter, constant_or_comparison, wrong_join_key, group_by (a GROUP BY column
missing or extra), wrong_aggregate (COUNT vs COUNT DISTINCT, SUM vs AVG, MIN vs MAX),
dropped_distinct, flipped_order, limit_off_by_one, fanout_join (an extra join to a child
table), join_type (INNER vs LEFT). What a mutant does on the data (a fan-out join that repeats
no row only drops rows) is settled after it runs: see `kept_mutants`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from dia_assets.platform.sql.predicates import boundary_swap, literal_filter

CLASSES = ("dropped_filter", "constant_or_comparison", "wrong_join_key", "group_by", "wrong_aggregate",
           "dropped_distinct", "flipped_order", "limit_off_by_one", "fanout_join", "join_type")
CONTRACT_CLASSES = ("dropped_filter", "constant_or_comparison", "group_by", "dropped_distinct",
                    "flipped_order", "fanout_join")


@dataclass
class Mutant:
    cls: str
    sql: str
    note: str
    covered: bool
    fanout_probe: str | None = None  # fan-out join: a query true when it repeats some row (on data)


def _variants(tree: exp.Expression, pick: Callable[[exp.Expression], bool],
              change: Callable[[exp.Expression, exp.Expression], Any]) -> Iterator[tuple[exp.Expression, Any]]:
    """For every node `pick` selects: a copy of the tree with `change(node_copy, root_copy)`
    applied (a falsy return skips it)."""
    nodes = list(tree.walk())
    for i, node in enumerate(nodes):
        if not pick(node):
            continue
        root = tree.copy()
        target = list(root.walk())[i]
        note = change(target, root)
        if note:
            yield root, note


def _conjunct_of_where(node: exp.Expression) -> bool:
    if isinstance(node, exp.And):
        return False
    parent = node.parent
    while isinstance(parent, exp.And):
        parent = parent.parent
    return isinstance(parent, exp.Where) and node.parent is not None and not isinstance(node, exp.Where)


def _drop(node: exp.Expression, root: exp.Expression) -> str:
    parent = node.parent
    text = node.sql()
    if isinstance(parent, exp.Where):
        parent.pop()
    elif isinstance(parent, exp.And):
        other = parent.expression if parent.this is node else parent.this
        parent.replace(other.copy())
    else:
        return ""
    return f"dropped {text[:80]}"


def _bump(lit: exp.Literal) -> exp.Expression | None:
    if lit.is_string:
        text = lit.name
        if len(text) >= 10 and text[:4].isdigit() and text[4] == "-":  # a date: one year later
            return exp.Literal.string(str(int(text[:4]) + 1) + text[4:])
        return exp.Literal.string(text + "_x") if text else None
    try:
        value = int(lit.name)
        return exp.Literal.number(value + 1)
    except ValueError:
        return exp.Literal.number(round(float(lit.name) * 1.1 + 0.01, 4))


def _sources(select: exp.Select) -> dict[str, str]:
    return {t.alias_or_name.lower(): t.name.lower() for t in select.find_all(exp.Table)
            if t.find_ancestor(exp.Select) is select}


def _fanout_probe(select: exp.Select, root: exp.Expression, alias: str, key: str, child: str,
                  dialect: str) -> str:
    """A query whose value is true when joining `child` on `key` repeats some row `select`
    reads (a child key value matched by the select's rows occurs twice in the child)."""
    rows = select.copy()
    for part in ("group", "having", "order", "limit", "offset", "distinct", "qualify", "windows"):
        rows.set(part, None)
    rows.set("expressions", [exp.column(key, table=alias)])
    with_ = root.args.get("with_") or root.args.get("with")
    if select is not root and with_ is not None:
        rows.set("with_" if "with_" in root.args else "with", with_.copy())
    return (f"SELECT EXISTS (SELECT 1 FROM {exp.to_table(child).sql(dialect=dialect)} AS fx WHERE fx.{key} IN "
            f"({rows.sql(dialect=dialect)}) GROUP BY fx.{key} HAVING COUNT(*) > 1)")


def mutants(sql: str, dialect: str, schema: dict[str, dict[str, str]], contract: dict[str, Any],
            keys: dict[str, list[str]] | None = None, seed: int = 0) -> list[Mutant]:
    """Every mutant of `sql` (deduplicated, not yet executed). `schema` is {table: {column:
    type}} in lower case; `keys` the tables' key columns when known (for fan-out joins).
    Deterministic: where several mistakes of a kind fit (another join column, another child
    table), `seed` picks one; tables are taken in sorted order, never in the
    order a dictionary happens to hold them."""
    schema = {t: dict(cols) for t, cols in sorted(schema.items())}
    keys = {t: list(k) for t, k in sorted((keys or {}).items())}

    def pick(options: list[Any], *why: str) -> Any:
        return random.Random("|".join((str(seed), sql, *why))).choice(options) if options else None

    tree = sqlglot.parse_one(sql, read=dialect)
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    has_keys = bool(contract.get("granularity", {}).get("key_columns"))
    has_order = bool(contract.get("order"))
    out: list[Mutant] = []

    def add(cls: str, root: exp.Expression, note: str, covered: bool) -> None:
        out.append(Mutant(cls, root.sql(dialect=dialect), note, covered))

    # dropped filter, changed constant or comparison
    for root, note in _variants(tree, _conjunct_of_where, _drop):
        out.append(Mutant("dropped_filter", root.sql(dialect=dialect), note, False))
    declared = [node for node in tree.walk() if _conjunct_of_where(node) and literal_filter(node, tree, ctes)]
    decl_sql = {d.sql() for d in declared}
    for m in out:
        m.covered = any(m.note == f"dropped {d[:80]}" for d in decl_sql)

    def in_filter(node: exp.Expression) -> bool:
        pred = node if isinstance(node, (exp.Binary, exp.In, exp.Between)) else None
        return pred is not None and _conjunct_of_where(node)

    def flip(node: exp.Expression, root: exp.Expression) -> str:
        new = boundary_swap(node)
        if new is None or not list(node.find_all(exp.Literal)):
            return ""
        text = node.sql()
        node.replace(new(this=node.this.copy(), expression=node.expression.copy()))
        return f"comparison in {text[:60]}"

    def constant(node: exp.Expression, root: exp.Expression) -> str:
        lits = [lit for lit in node.find_all(exp.Literal) if lit.find_ancestor(exp.Select) is node.find_ancestor(exp.Select)]
        if not lits:
            return ""
        if isinstance(node, exp.In) and len(node.expressions) > 1:
            text = node.sql()
            node.expressions[0].pop()
            return f"fewer values in {text[:60]}"
        new = _bump(lits[-1] if isinstance(node, exp.Between) else lits[0])
        if new is None:
            return ""
        text = node.sql()
        (lits[-1] if isinstance(node, exp.Between) else lits[0]).replace(new)
        return f"constant in {text[:60]}"

    for change in (flip, constant):
        for root, note in _variants(tree, in_filter, change):
            text = note.split(" in ", 1)[1]
            add("constant_or_comparison", root, note, any(d.startswith(text[:40]) for d in decl_sql))

    # wrong join key
    def join_key(node: exp.Expression, root: exp.Expression) -> str:
        on = node.args.get("on")
        if not isinstance(on, exp.EQ) or not all(isinstance(s, exp.Column) for s in (on.this, on.expression)):
            return ""
        select = node.find_ancestor(exp.Select)
        side = on.expression
        table = _sources(select).get(side.table.lower()) if select is not None and side.table else None
        cols = schema.get(table or "", {})
        want = cols.get(side.name.lower(), "")
        options = [name for name, typ in cols.items()
                   if name != side.name.lower() and typ == want
                   and (name.endswith("id") or name.endswith("_number") or name.endswith("code"))]
        name = pick(options, "join_key", on.sql())
        if name is None:
            return ""
        text = on.sql()
        side.replace(exp.column(name, table=side.table))
        return f"join on {name} instead of {text[:60]}"

    for root, note in _variants(tree, lambda n: isinstance(n, exp.Join), join_key):
        add("wrong_join_key", root, note, False)

    # GROUP BY column missing or extra
    def missing_group(node: exp.Expression, root: exp.Expression) -> str:
        group = node.parent
        if not isinstance(group, exp.Group) or len(group.expressions) < 2:
            return ""
        select = group.parent
        text = node.sql()
        for p in list(select.expressions):
            inner = p.this if isinstance(p, exp.Alias) else p
            if inner == node and len(select.expressions) > 1:
                p.pop()
        node.pop()
        return f"{'outer' if select is root else 'inner'} GROUP BY without {text}"

    for root, note in _variants(tree, lambda n: isinstance(n.parent, exp.Group), missing_group):
        add("group_by", root, note, has_keys and note.startswith("outer"))

    def extra_group(node: exp.Expression, root: exp.Expression) -> str:
        if not isinstance(node, exp.Select) or node.args.get("group") is None:
            return ""
        grouped = {g.sql() for g in node.args["group"].expressions}
        for alias, table in _sources(node).items():
            for col in (keys.get(table) or list(schema.get(table, {}))[:1]):
                c = exp.column(col, table=alias)
                if c.sql() not in grouped:
                    node.args["group"].append("expressions", c)
                    return f"{'outer' if node is root else 'inner'} GROUP BY also {c.sql()}"
        return ""

    for root, note in _variants(tree, lambda n: isinstance(n, exp.Select), extra_group):
        add("group_by", root, note, has_keys and note.startswith("outer"))

    # wrong aggregate
    def aggregate(node: exp.Expression, root: exp.Expression) -> str:
        if isinstance(node, exp.Count):
            if isinstance(node.this, exp.Distinct):
                node.set("this", node.this.expressions[0].copy())
                return "COUNT DISTINCT -> COUNT"
            if isinstance(node.this, exp.Star):
                return ""
            node.set("this", exp.Distinct(expressions=[node.this.copy()]))
            return "COUNT -> COUNT DISTINCT"
        swap = {exp.Sum: exp.Avg, exp.Avg: exp.Sum, exp.Min: exp.Max, exp.Max: exp.Min}.get(type(node))
        if swap is None:
            return ""
        text = node.sql()
        node.replace(swap(this=node.this.copy()))
        return f"{text[:40]} -> {swap.__name__.upper()}"

    for root, note in _variants(tree, lambda n: isinstance(n, (exp.Count, exp.Sum, exp.Avg, exp.Min, exp.Max))
                                and not isinstance(n.parent, exp.Window), aggregate):
        add("wrong_aggregate", root, note, False)

    # dropped DISTINCT
    def distinct(node: exp.Expression, root: exp.Expression) -> str:
        if not isinstance(node, exp.Select) or node.args.get("distinct") is None:
            return ""
        node.set("distinct", None)
        return f"{'outer' if node is root else 'inner'} SELECT DISTINCT -> SELECT"

    for root, note in _variants(tree, lambda n: isinstance(n, exp.Select), distinct):
        add("dropped_distinct", root, note, has_keys and note.startswith("outer"))

    # flipped ORDER BY (the outer query's first key), LIMIT off by one
    order = tree.args.get("order")
    if order is not None and order.expressions:
        root = tree.copy()
        first = root.args["order"].expressions[0]
        first.set("desc", not first.args.get("desc"))
        add("flipped_order", root, f"ORDER BY {first.sql()}", has_order)
    limit = tree.args.get("limit")
    value = limit.args.get("expression") or limit.this if limit is not None else None
    if isinstance(value, exp.Literal) and value.is_int:
        n = int(value.name)
        for k in ([n + 1, n - 1] if n > 1 else [n + 1]):
            root = tree.copy()
            root.set("limit", exp.Limit(expression=exp.Literal.number(k)))
            add("limit_off_by_one", root, f"LIMIT {k}", bool(contract.get("limit")))

    # an extra join to a child table (fans out), INNER vs LEFT
    def fanout(node: exp.Expression, root: exp.Expression) -> str:
        if not isinstance(node, exp.Select) or node.args.get("from_", node.args.get("from")) is None:
            return ""
        for alias, table in sorted(_sources(node).items()):
            key = keys.get(table) or []
            if len(key) != 1:
                continue
            children = [child for child, cols in schema.items()
                        if child != table and key[0] in cols and child not in ctes]
            child = pick(children, "fanout", alias, table)
            if child is None:
                continue
            aggs = any(a.find_ancestor(exp.Select) is node and not (
                isinstance(a, exp.Count) and isinstance(a.this, exp.Distinct))
                for a in node.find_all(exp.Count, exp.Sum, exp.Avg))
            scope = "covered" if aggs or (node is root and has_keys) else "uncovered"
            probes.append(_fanout_probe(node, root, alias, key[0], child, dialect))
            node.append("joins", exp.Join(this=exp.to_table(child).as_("fx"),
                                          on=exp.EQ(this=exp.column(key[0], table="fx"),
                                                    expression=exp.column(key[0], table=alias))))
            return f"{scope}: JOIN {child} fx ON fx.{key[0]} = {alias}.{key[0]}"
        return ""

    probes: list[str] = []

    for root, note in _variants(tree, lambda n: isinstance(n, exp.Select), fanout):
        scope, _, text = note.partition(": ")
        add("fanout_join", root, text, scope == "covered")
        out[-1].fanout_probe = probes[-1]

    def join_type(node: exp.Expression, root: exp.Expression) -> str:
        side = (node.side or "").upper()
        if side == "LEFT":
            node.set("side", None)
            return "LEFT JOIN -> JOIN"
        if not side and not node.kind:
            node.set("side", "LEFT")
            return "JOIN -> LEFT JOIN"
        return ""

    for root, note in _variants(tree, lambda n: isinstance(n, exp.Join), join_type):
        add("join_type", root, note, False)

    seen, unique = {sql}, []
    for m in out:
        if m.sql not in seen:
            seen.add(m.sql)
            unique.append(m)
    return unique
