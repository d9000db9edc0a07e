"""Self-verification (DIA §3.5, App. E STEP 4): the executed result against the declared
contract, componentwise. Every check is computed from the SQL tree or by execution, never
by asking the model."""

from __future__ import annotations

import contextlib
import datetime as dt
from decimal import Decimal
from typing import Any

from sqlglot import exp

from dia_assets.agents.query.dialects import Database, QueryOutput
from dia_assets.agents.query.gate import Gate
from dia_assets.agents.query.schema import SchemaIndex
from dia_assets.contracts.query_result import Check, FilterSpec, OutputContract, Verification

_PREDICATES = (exp.Predicate, exp.In, exp.Between, exp.Like, exp.ILike, exp.Is)


def verify_result(
    contract: OutputContract,
    sql: str,
    qualified: exp.Expression,
    output: QueryOutput,
    db: Database,
    index: SchemaIndex,
    timeout_s: float = 10.0,
    gate: Gate | None = None,
) -> Verification:
    """With a gate, every verification probe passes it (they embed the model's SQL)."""
    if gate is not None:
        db = gate.as_database()  # type: ignore[assignment]
    checks = [
        *check_columns(contract, output),
        check_non_empty(contract, output),
        check_granularity(contract, sql, output, db, timeout_s),
        check_order(contract, qualified, output),
        *check_filters(contract, qualified),
        check_null_filters(contract, qualified),
        check_fanout(contract, qualified, db, index, timeout_s),
    ]
    return Verification(passed=all(c.passed for c in checks), checks=checks)


def signature(verification: Verification) -> str:
    """Structural signature of a failure: which checks failed (DIA D.5)."""
    return "|".join(sorted({c.name for c in verification.failed()}))


def check_columns(contract: OutputContract, output: QueryOutput) -> list[Check]:
    want, got = contract.columns, output.columns
    count = Check(
        name="column_count", passed=len(want) == len(got),
        detail=f"expected {len(want)} columns, got {len(got)}",
    )
    same = [w.lower() for w in want] == [g.lower() for g in got]
    names = Check(
        name="column_names", passed=same,
        detail="names and order match" if same else f"expected {want}, got {got}",
    )
    return [count, names]


def check_non_empty(contract: OutputContract, output: QueryOutput) -> Check:
    ok = output.row_count > 0 or contract.allow_empty
    return Check(name="non_empty", passed=ok, detail=f"{output.row_count} rows" + ("" if ok else
                 ": an empty result usually means a wrong filter value; probe the column's values"))


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def check_granularity(
    contract: OutputContract, sql: str, output: QueryOutput, db: Database, timeout_s: float
) -> Check:
    keys = contract.granularity.key_columns
    if not keys:
        return Check(name="granularity", passed=True, detail="no key columns declared")
    lower = [c.lower() for c in output.columns]
    missing = [k for k in keys if k.lower() not in lower]
    if missing:
        return Check(name="granularity", passed=False, detail=f"key columns {missing} are not in the result")
    if not output.truncated:
        idx = [lower.index(k.lower()) for k in keys]
        seen: dict[tuple[Any, ...], int] = {}
        for row in output.rows:
            key = tuple(row[i] for i in idx)
            seen[key] = seen.get(key, 0) + 1
        dupes = [k for k, n in seen.items() if n > 1]
    else:
        cols = ", ".join(_q(output.columns[lower.index(k.lower())]) for k in keys)
        probe = (f"SELECT {cols} FROM ({sql.rstrip().rstrip(';')}) AS q GROUP BY {cols} "
                 f"HAVING COUNT(*) > 1 LIMIT 5")
        try:
            dupes = [tuple(r) for r in db.query(probe, 5, timeout_s).rows]
        except Exception as err:
            return Check(name="granularity", passed=False, detail=f"granularity probe did not run: {err}"[:200])
    if dupes:
        example = f" (e.g. {list(dupes[0])})" if getattr(db, "show_values", True) else ""
        return Check(name="granularity", passed=False,
                     detail=f"{keys} repeat in the result{example}: not one row per "
                            f"{contract.granularity.description or ', '.join(keys)}")
    return Check(name="granularity", passed=True, detail=f"{keys} unique over {output.row_count} rows")


def _sort_key(value: Any) -> tuple[int, Any]:
    if value is None:
        return (1, 0)
    if isinstance(value, (int, float, Decimal)):
        return (0, float(value))
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return (0, value.isoformat())
    return (0, str(value))


def check_order(contract: OutputContract, tree: exp.Expression, output: QueryOutput) -> Check:
    if not contract.order:
        return Check(name="ordering", passed=True, detail="unordered by contract")
    order = tree.args.get("order")
    if order is None:
        return Check(name="ordering", passed=False, detail="the contract declares an order but the outer query has no ORDER BY")
    lower = [c.lower() for c in output.columns]
    for item in contract.order:
        if item.column.lower() not in lower:
            return Check(name="ordering", passed=False, detail=f"order column {item.column!r} is not in the result")
    rows = output.rows
    for i in range(1, len(rows)):
        for item in contract.order:
            j = lower.index(item.column.lower())
            a, b = _sort_key(rows[i - 1][j]), _sort_key(rows[i][j])
            if a == b:
                continue
            if (a > b) if item.direction == "asc" else (a < b):
                return Check(name="ordering", passed=False,
                             detail=f"rows {i} and {i + 1} are not ordered by {item.column} {item.direction}")
            break
    spec = ", ".join(f"{o.column} {o.direction}" for o in contract.order)
    return Check(name="ordering", passed=True, detail=f"rows ordered by {spec}")


def _literals(node: exp.Expression) -> set[str]:
    out = set()
    for lit in node.find_all(exp.Literal, exp.Boolean):
        text = str(lit.this).strip().lower()
        out.add(text)
        with contextlib.suppress(ValueError):
            out.add(repr(float(text)))
    return out


def _value_forms(value: Any) -> set[str]:
    values = value if isinstance(value, list) else [value]
    out = set()
    for v in values:
        text = str(v).strip().lower()
        out.add(text)
        with contextlib.suppress(ValueError):
            out.add(repr(float(text)))
    return out


def predicates_on(tree: exp.Expression, column: str) -> list[exp.Expression]:
    """Comparison predicates (anywhere: WHERE, HAVING, ON, CASE, FILTER) that use a column."""
    name = column.split(".")[-1].lower()
    table = column.split(".")[0].lower() if "." in column else None
    found = []
    for col in tree.find_all(exp.Column):
        if col.name.lower() != name:
            continue
        pred = col.find_ancestor(*_PREDICATES)
        if pred is None:
            continue
        if table and col.table and col.table.lower() != table:
            # qualified by alias: accept, the alias usually differs from the table name
            pass
        found.append(pred)
    return found


def check_filters(contract: OutputContract, tree: exp.Expression) -> list[Check]:
    checks = []
    for flt in contract.filters:
        checks.append(_check_filter(flt, tree))
    return checks


def _check_filter(flt: FilterSpec, tree: exp.Expression) -> Check:
    name = f"filter:{flt.description[:60]}"
    if not flt.column:
        return Check(name=name, passed=True, detail="no column declared: not mapped on the tree")
    preds = predicates_on(tree, flt.column)
    if not preds:
        return Check(name=name, passed=False,
                     detail=f"no predicate on {flt.column} in the SQL implements this filter")
    if flt.value is None or flt.value == "":
        return Check(name=name, passed=True, detail=f"implemented by {preds[0].sql()[:120]}")
    wanted = _value_forms(flt.value)
    for pred in preds:
        if wanted & _literals(pred):
            return Check(name=name, passed=True, detail=f"implemented by {pred.sql()[:120]}")
    return Check(name=name, passed=False,
                 detail=f"predicates on {flt.column} ({preds[0].sql()[:80]}) do not use the value {flt.value!r}; "
                        "use the value as stored (probe the column), or declare the contract again with it")


def check_null_filters(contract: OutputContract, tree: exp.Expression) -> Check:
    declared = {f.column.split(".")[-1].lower() for f in contract.filters if f.column}
    spurious = []
    for is_ in tree.find_all(exp.Is):
        if not isinstance(is_.expression, exp.Null) or not isinstance(is_.parent, exp.Not):
            continue
        if is_.find_ancestor(exp.Where, exp.Having) is None:
            continue
        col = is_.this
        if isinstance(col, exp.Column) and col.name.lower() not in declared:
            spurious.append(col.name)
    if spurious:
        return Check(name="null_filters", passed=False,
                     detail=f"IS NOT NULL on {sorted(set(spurious))} is not a filter of the question: "
                            "a defensive NULL filter drops valid rows")
    return Check(name="null_filters", passed=True, detail="no spurious NULL filters")


def _with(tree: exp.Expression) -> exp.Expression | None:
    return tree.args.get("with_") or tree.args.get("with")


def _entity_key(contract: OutputContract, select: exp.Select, count: exp.Count,
                index: SchemaIndex, db: Database, timeout_s: float) -> tuple[str, str] | None:
    """(alias, column) of the counted entity's key inside `select`."""
    sources = {}
    for table in select.find_all(exp.Table):
        if table.find_ancestor(exp.Select) is select:
            sources[table.alias_or_name.lower()] = table.name.lower()
    if contract.entity_key:
        table, column = contract.entity_key.lower().split(".", 1)
        for alias, name in sources.items():
            if name == table:
                return alias, column
        return None
    arg = count.this
    if isinstance(arg, exp.Column) and arg.table:
        alias = arg.table.lower()
    else:
        base = select.args.get("from_") or select.args.get("from")
        if base is None or not isinstance(base.this, exp.Table):
            return None
        alias = base.this.alias_or_name.lower()
    table = sources.get(alias)
    if table is None or table not in index.tables:
        return None
    pk = index.primary_key(table) or index.primary_key(next((t for t in index.tables if t.lower() == table), ""))
    if len(pk) == 1:
        return alias, pk[0]
    if pk:
        return None
    # no manifest key: the first column that is unique in its table
    for col in index.tables[table].columns[:3]:
        try:
            n, d = db.query(f'SELECT COUNT(*), COUNT(DISTINCT "{col.name}") FROM "{table}"', 1, timeout_s).rows[0]
        except Exception:
            return None
        if n == d and n:
            return alias, col.name
    return None


def check_fanout(
    contract: OutputContract, tree: exp.Expression, db: Database, index: SchemaIndex, timeout_s: float
) -> Check:
    """COUNT(*) or COUNT(col) over a join: compare with COUNT(DISTINCT entity key)."""
    for count in tree.find_all(exp.Count):
        if isinstance(count.this, exp.Distinct):
            continue
        select = count.find_ancestor(exp.Select)
        if select is None or not select.args.get("joins"):
            continue
        key = _entity_key(contract, select, count, index, db, timeout_s)
        if key is None:
            continue
        alias, column = key
        group = select.args.get("group")
        if group is not None and any(
            isinstance(g, exp.Column) and g.name.lower() == column.lower() and (not g.table or g.table.lower() == alias)
            for g in group.expressions
        ):
            continue  # one group per entity: the count is of the many side, on purpose
        probe = select.copy()
        probe.set("expressions", [
            exp.alias_(exp.Count(this=exp.Star()), "n"),
            exp.alias_(exp.Count(this=exp.Distinct(expressions=[exp.column(column, table=alias)])), "d"),
        ])
        for arg in ("group", "order", "having", "limit", "offset", "qualify", "distinct"):
            probe.set(arg, None)
        with_ = _with(tree)
        if with_ is not None and select is not tree:
            probe.set("with_", with_.copy())
        try:
            n, d = db.query(probe.sql(dialect=db.dialect), 1, timeout_s).rows[0]
        except Exception as err:
            return Check(name="join_fanout", passed=True, detail=f"fan-out probe did not run: {err}"[:200])
        if n != d:
            return Check(name="join_fanout", passed=False,
                         detail=f"{count.sql()} counts {n} joined rows but there are only {d} distinct "
                                f"{alias}.{column}: the join fans out; use COUNT(DISTINCT {alias}.{column}) "
                                "or aggregate before joining")
        return Check(name="join_fanout", passed=True, detail=f"{count.sql()}: {n} rows = {d} distinct {alias}.{column}")
    return Check(name="join_fanout", passed=True, detail="no COUNT over a join")
