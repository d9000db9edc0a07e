"""Self-verification (DIA §3.5, App. E STEP 4): the executed result against the declared
contract, componentwise. Every check is computed from the SQL tree or by execution, never
by asking the model."""

from __future__ import annotations

import contextlib
import datetime as dt
import functools
from collections import Counter
from decimal import Decimal
from typing import Any

from sqlglot import exp

from dia_assets.agents.query.dialects import Database, QueryOutput, nulls_first_default
from dia_assets.agents.query.sanity import sanity_checks
from dia_assets.agents.query.schema import SchemaIndex
from dia_assets.contracts.query_result import Check, FilterSpec, OutputContract, Verification
from dia_assets.platform.sql.gate import Gate
from dia_assets.platform.sql.predicates import MIRRORED, NEGATED, NODE_KINDS, SPELLINGS, negated
from dia_assets.platform.sql.rows import normalize_rows

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
    question: str | None = None,
) -> Verification:
    """With a gate, every verification probe passes it (they embed the model's SQL)."""
    if gate is not None:
        db = gate.as_database()  # type: ignore[assignment]
    checks = [
        *check_columns(contract, output),
        check_non_empty(contract, output),
        check_granularity(contract, sql, output, db, timeout_s),
        check_order(contract, qualified, output, db.dialect),
        check_limit(contract, qualified, output, db, timeout_s),
        *check_filters(contract, qualified),
        check_null_filters(contract, qualified, output, db, timeout_s),
        check_fanout(contract, qualified, db, index, timeout_s),
        *sanity_checks(qualified, question, db, index, timeout_s),
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
    """A comparable form of a non-NULL value (NULLs are placed by `_nulls_first`)."""
    if isinstance(value, (int, float, Decimal)):
        return (0, float(value))
    if isinstance(value, (dt.date, dt.datetime, dt.time)):
        return (0, value.isoformat())
    return (0, str(value))


def _collation_key(value: Any) -> tuple[int, Any]:
    """Text as a linguistic collation may compare it (case and punctuation ignored): an
    engine with such a collation (PostgreSQL's en_US, say) orders 'b' before 'C'."""
    if isinstance(value, str):
        return (0, "".join(ch for ch in value.casefold() if ch.isalnum()))
    return _sort_key(value)


def _out_of_order(a: Any, b: Any, desc: bool) -> bool | None:
    """True when non-NULL `a` must not come before `b` in this direction, False when it
    rightly does, None when they tie (rows tied on a sort key may come in any order). Text is
    out of order only if it is so byte-wise and under a linguistic collation alike."""
    keys = [_sort_key] + ([_collation_key] if isinstance(a, str) or isinstance(b, str) else [])
    verdicts = []
    for key in keys:
        ka, kb = key(a), key(b)
        verdicts.append(None if ka == kb else ((ka > kb) if not desc else (ka < kb)))
    if any(v is None for v in verdicts):
        return None
    return all(verdicts)


@functools.lru_cache(maxsize=64)
def _default_nulls_first(dialect: str, desc: bool) -> bool:
    """sqlglot's notion of the dialect's default NULL placement (what it fills in when the
    SQL does not say NULLS FIRST/LAST)."""
    import sqlglot

    tree = sqlglot.parse_one(f"SELECT x FROM t ORDER BY x{' DESC' if desc else ''}", read=dialect)
    return bool(tree.find(exp.Ordered).args.get("nulls_first"))  # type: ignore[union-attr]


def order_items(tree: exp.Expression, columns: list[str]) -> dict[str, exp.Ordered]:
    """The outer ORDER BY items by the (lower-case) result column they sort: a column or
    alias of that name, a position, or the expression a projection shows under that name."""
    order = tree.args.get("order")
    if order is None:
        return {}
    lower = [c.lower() for c in columns]
    projections = tree.expressions if isinstance(tree, exp.Select) else []
    out: dict[str, exp.Ordered] = {}
    for item in order.expressions:
        node = item.this
        name = None
        if isinstance(node, exp.Literal) and node.is_int and 0 < int(node.name) <= len(lower):
            name = lower[int(node.name) - 1]
        elif isinstance(node, exp.Column) and node.name.lower() in lower:
            name = node.name.lower()
        else:
            for i, p in enumerate(projections):
                if i < len(lower) and isinstance(p, exp.Alias) and p.this == node:
                    name = lower[i]
                    break
        if name is not None:
            out.setdefault(name, item)
    return out


def nulls_first(item: exp.Ordered | None, desc: bool, dialect: str | None) -> bool:
    """Where NULLs come for one sort key on this engine: an explicit NULLS FIRST/LAST of the
    SQL, else the engine's default (`dialects.nulls_first_default`). sqlglot fills
    `nulls_first` with its dialect default when the SQL says nothing, so a value that differs
    from that default was written explicitly."""
    engine = nulls_first_default(dialect or "postgres", desc)
    if item is None or dialect is None:
        return engine
    written = item.args.get("nulls_first")
    if written is None:
        return engine
    return bool(written) if bool(written) != _default_nulls_first(dialect, desc) else engine


def check_order(contract: OutputContract, tree: exp.Expression, output: QueryOutput,
                dialect: str | None = None) -> Check:
    """The rows follow the declared order, with NULLs where this engine puts them (the SQL's
    NULLS FIRST/LAST, else the engine's default); rows tied on every declared key may come
    in any order."""
    if not contract.order:
        return Check(name="ordering", passed=True, detail="unordered by contract")
    order = tree.args.get("order")
    if order is None:
        return Check(name="ordering", passed=False, detail="the contract declares an order but the outer query has no ORDER BY")
    lower = [c.lower() for c in output.columns]
    for item in contract.order:
        if item.column.lower() not in lower:
            return Check(name="ordering", passed=False, detail=f"order column {item.column!r} is not in the result")
    written = order_items(tree, output.columns)
    plan = []
    for item in contract.order:
        desc = item.direction == "desc"
        first = nulls_first(written.get(item.column.lower()), desc, dialect)
        plan.append((item, lower.index(item.column.lower()), desc, first))
    rows = output.rows
    for i in range(1, len(rows)):
        for item, j, desc, first in plan:
            a, b = rows[i - 1][j], rows[i][j]
            if a is None and b is None:
                continue
            if a is None or b is None:
                bad = (b is None) == first  # a NULL after a value when NULLs come first, or before when last
            else:
                verdict = _out_of_order(a, b, desc)
                if verdict is None:
                    continue
                bad = verdict
            if bad:
                nulls = "first" if first else "last"
                return Check(name="ordering", passed=False,
                             detail=f"rows {i} and {i + 1} are not ordered by {item.column} {item.direction} "
                                    f"(NULLs {nulls} on this engine)")
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


def _harmless(tree: exp.Expression, is_: exp.Is, output: QueryOutput | None, db: Database | None,
              timeout_s: float) -> bool:
    """Whether the result is the same without this IS NOT NULL (its NULLs were dropped anyway,
    e.g. by an AVG over the column): then it filters nothing the question keeps."""
    if output is None or db is None or output.truncated:
        return False
    probe = tree.copy()
    target = next((n for n in probe.find_all(exp.Is) if n == is_), None)
    if target is None:
        return False
    replaced = target.parent if isinstance(target.parent, exp.Not) else target
    replaced.replace(exp.true())
    try:
        rows = db.query(probe.sql(dialect=db.dialect), len(output.rows) + 1, timeout_s).rows
    except Exception:
        return False
    # the same rows as a multiset (an IS NOT NULL dropping a duplicate row changes it)
    return Counter(normalize_rows(rows, 9)) == Counter(normalize_rows(output.rows, 9))


def check_null_filters(contract: OutputContract, tree: exp.Expression, output: QueryOutput | None = None,
                       db: Database | None = None, timeout_s: float = 10.0) -> Check:
    """No IS NOT NULL the question did not ask for, unless dropping it changes nothing (probed)."""
    declared = {f.column.split(".")[-1].lower() for f in contract.filters if f.column}
    spurious = []
    for is_ in tree.find_all(exp.Is):
        if not isinstance(is_.expression, exp.Null) or not negated(is_):
            continue
        if is_.find_ancestor(exp.Where, exp.Having) is None:
            continue
        col = is_.this
        if isinstance(col, exp.Column) and col.name.lower() not in declared \
                and not _harmless(tree, is_, output, db, timeout_s):
            spurious.append(col.name)
    if spurious:
        return Check(name="null_filters", passed=False,
                     detail=f"IS NOT NULL on {sorted(set(spurious))} is not a filter of the question: "
                            "a defensive NULL filter drops valid rows")
    return Check(name="null_filters", passed=True, detail="no spurious NULL filters")


def _sources(select: exp.Select) -> dict[str, str]:
    """alias -> table name for the tables read directly by `select` (not its subqueries)."""
    out = {}
    for table in select.find_all(exp.Table):
        if table.find_ancestor(exp.Select) is select:
            out[table.alias_or_name.lower()] = table.name.lower()
    return out


def predicates_on(tree: exp.Expression, column: str) -> list[exp.Expression]:
    """Comparison predicates (anywhere: WHERE, HAVING, ON, CASE, FILTER) that use a column.
    A declared `table.column` only matches a column whose qualifier resolves to that table
    (an alias of a CTE or subquery cannot be resolved and is accepted)."""
    name = column.split(".")[-1].lower()
    table = column.split(".")[0].lower() if "." in column else None
    found = []
    for col in tree.find_all(exp.Column):
        if col.name.lower() != name:
            continue
        pred = col.find_ancestor(*_PREDICATES)
        if pred is None:
            continue
        if table and col.table:
            select = col.find_ancestor(exp.Select)
            resolved = _sources(select).get(col.table.lower()) if select is not None else None
            if resolved is not None and resolved != table:
                continue  # the same column name on another table does not implement the filter
        found.append(pred)
    return found


def check_filters(contract: OutputContract, tree: exp.Expression) -> list[Check]:
    return [_check_filter(flt, tree) for flt in contract.filters]


def declared_op(op: str | None) -> str | None:
    return SPELLINGS.get(" ".join(str(op).lower().split())) if op else None


def tree_op(pred: exp.Expression, column: str) -> str | None:
    """The comparison a predicate applies to `column`, normalised (column on the left)."""
    name = column.split(".")[-1].lower()
    kind = None
    if isinstance(pred, exp.Is):
        kind = "null"
    else:
        for cls, op in NODE_KINDS:
            if isinstance(pred, cls):
                kind = op
                break
    if kind is None:
        return None
    if kind in MIRRORED and isinstance(pred, exp.Binary):
        left = {c.name.lower() for c in pred.left.find_all(exp.Column)}
        if name not in left:
            kind = MIRRORED[kind]
    if negated(pred):
        kind = NEGATED.get(kind, kind)
    return kind


def _check_filter(flt: FilterSpec, tree: exp.Expression) -> Check:
    name = f"filter:{flt.description[:60]}"
    if not flt.column:  # parse_contract refuses these; a hand-built contract still fails
        return Check(name=name, passed=False, detail="the filter names no column: it cannot be checked")
    preds = predicates_on(tree, flt.column)
    if not preds:
        return Check(name=name, passed=False,
                     detail=f"no predicate on {flt.column} in the SQL implements this filter")
    want_op = declared_op(flt.op)
    if want_op is not None:
        with_op = [p for p in preds if tree_op(p, flt.column) == want_op]
        if want_op == "between":  # x >= a AND x <= b implements BETWEEN a AND b
            with_op += [p for p in preds if tree_op(p, flt.column) in ("ge", "le", "gt", "lt")]
        if not with_op:
            found = ", ".join(sorted({str(tree_op(p, flt.column)) for p in preds}))
            return Check(name=name, passed=False,
                         detail=f"the predicates on {flt.column} ({preds[0].sql()[:80]}) apply {found}, "
                                f"not the declared {flt.op!r}")
        preds = with_op
    if flt.value is None or flt.value == "":
        return Check(name=name, passed=True, detail=f"implemented by {preds[0].sql()[:120]}")
    wanted = _value_forms(flt.value)
    literals = set().union(*(_literals(p) for p in preds))
    if isinstance(flt.value, list) and want_op in ("between", "eq", "ne", None):
        missing = [v for v in flt.value if not (_value_forms(v) & literals)]
        if not missing:
            return Check(name=name, passed=True, detail=f"implemented by {preds[0].sql()[:120]}")
    elif wanted & literals:
        hit = next(p for p in preds if wanted & _literals(p))
        return Check(name=name, passed=True, detail=f"implemented by {hit.sql()[:120]}")
    return Check(name=name, passed=False,
                 detail=f"predicates on {flt.column} ({preds[0].sql()[:80]}) do not use the value {flt.value!r}; "
                        "use the value as stored (probe the column)")


def check_limit(contract: OutputContract, tree: exp.Expression, output: QueryOutput,
                db: Database | None = None, timeout_s: float = 10.0) -> Check:
    """A declared top-k: the outer LIMIT is k, no more than k rows come back, and (with a
    declared order) they are the first k by that order: the query without its LIMIT, sorted
    by the contract's order, must start with the same order values."""
    if contract.limit is None:
        return Check(name="row_limit", passed=True, detail="no row limit declared")
    k = contract.limit
    limit = tree.args.get("limit")
    written = None
    if limit is not None:
        value = limit.args.get("expression") or limit.this
        try:
            written = int(value.name) if value is not None else None
        except (TypeError, ValueError):
            written = None
    if written is not None and written != k:
        return Check(name="row_limit", passed=False, detail=f"the query keeps {written} rows (LIMIT), the contract {k}")
    if output.row_count > k:
        return Check(name="row_limit", passed=False, detail=f"{output.row_count} rows, the contract declares at most {k}")
    lower = [c.lower() for c in output.columns]
    if db is None or not contract.order or limit is None or any(o.column.lower() not in lower for o in contract.order):
        return Check(name="row_limit", passed=True, detail=f"{output.row_count} rows <= {k}")
    full = tree.copy()
    full.set("limit", None)
    full.set("offset", None)
    cols = [output.columns[lower.index(o.column.lower())] for o in contract.order]
    written = order_items(tree, output.columns)
    order = ", ".join(  # NULLs where the query puts them, so the probe picks the same first k
        f"{_q(c)} {o.direction.upper()} NULLS "
        f"{'FIRST' if nulls_first(written.get(o.column.lower()), o.direction == 'desc', db.dialect) else 'LAST'}"
        for c, o in zip(cols, contract.order, strict=True))
    probe = (f"SELECT {', '.join(_q(c) for c in cols)} FROM ({full.sql(dialect=db.dialect)}) AS topk_probe "
             f"ORDER BY {order} LIMIT {k}")
    try:
        expected = [tuple(r) for r in db.query(probe, k, timeout_s).rows]
    except Exception as err:
        return Check(name="row_limit", passed=False, detail=f"the top-{k} probe did not run: {err}"[:300])
    idx = [lower.index(o.column.lower()) for o in contract.order]
    got = [tuple(r[i] for i in idx) for r in output.rows]
    if sorted(map(repr, got)) != sorted(map(repr, expected)):
        return Check(name="row_limit", passed=False, detail=(
            f"the {len(got)} rows kept are not the first {k} by {', '.join(f'{o.column} {o.direction}' for o in contract.order)}"))
    return Check(name="row_limit", passed=True, detail=f"the first {output.row_count} rows by the declared order")


def _with(tree: exp.Expression) -> exp.Expression | None:
    return tree.args.get("with_") or tree.args.get("with")


_KEYED_AGGS = (exp.Count, exp.Sum, exp.Avg)


class _Keys:
    """The identifying columns of warehouse tables: the manifest's primary key, else the
    first of the leading columns, or the first column with one of the next five, unique in
    the data. Cached per verification."""

    def __init__(self, index: SchemaIndex, db: Database, timeout_s: float) -> None:
        self.index, self.db, self.timeout_s = index, db, timeout_s
        self.cache: dict[str, list[str] | None] = {}

    def _name(self, table: str) -> str | None:
        if table in self.index.tables:
            return table
        return next((t for t in self.index.tables if t.lower() == table.lower()), None)

    def key(self, table: str) -> list[str] | None:
        if table in self.cache:
            return self.cache[table]
        name = self._name(table)
        key: list[str] | None = None
        if name is not None:
            key = list(self.index.primary_key(name)) or None
            if key is None:
                cols = [c.name for c in self.index.tables[name].columns]
                # a lead column alone, or with a later one (an order line: order id + line number)
                candidates = [[c] for c in cols[:3]] + [[cols[0], c] for c in cols[1:6]]
                for cand in candidates:
                    distinct = " || '|' || ".join(f'CAST({_q(c)} AS VARCHAR)' for c in cand)
                    try:
                        n, d = self.db.query(f"SELECT COUNT(*), COUNT(DISTINCT {distinct}) FROM {_q(name)}",
                                             1, self.timeout_s).rows[0]
                    except Exception:
                        break
                    if n and n == d:
                        key = cand
                        break
        self.cache[table] = key
        return key


def _key_sql(alias: str, key: list[str]) -> str:
    if len(key) == 1:
        return f"{_q(alias)}.{_q(key[0])}"
    return " || '|' || ".join(f"CAST({_q(alias)}.{_q(c)} AS VARCHAR)" for c in key)


def _outer_refs(select: exp.Select) -> set[str]:
    """Qualifiers a select uses that none of its own sources define (a correlated subquery)."""
    defined = {t.alias_or_name.lower() for t in select.find_all(exp.Table)}
    defined |= {s.alias.lower() for s in select.find_all(exp.Subquery) if s.alias}
    defined |= {c.alias_or_name.lower() for c in select.find_all(exp.CTE)}
    return {c.table.lower() for c in select.find_all(exp.Column) if c.table} - defined


def _resolved_group(select: exp.Select) -> list[exp.Expression]:
    """GROUP BY items with positions and output aliases replaced by the expressions they name."""
    group = select.args.get("group")
    if group is None:
        return []
    projections = select.expressions
    aliases = {p.alias.lower(): p.this for p in projections if isinstance(p, exp.Alias)}
    out = []
    for g in group.expressions:
        if isinstance(g, exp.Literal) and g.is_int and 0 < int(g.name) <= len(projections):
            p = projections[int(g.name) - 1]
            out.append((p.this if isinstance(p, exp.Alias) else p).copy())
        elif isinstance(g, exp.Column) and not g.table and g.name.lower() in aliases:
            out.append(aliases[g.name.lower()].copy())
        else:
            out.append(g.copy())
    return out


def _agg_tables(agg: exp.Expression, sources: dict[str, str], index: SchemaIndex) -> set[str]:
    """Aliases of the source tables whose columns an aggregate reads."""
    out = set()
    for col in agg.find_all(exp.Column):
        if col.table:
            if col.table.lower() in sources:
                out.add(col.table.lower())
            continue
        owners = [a for a, t in sources.items()
                  if t in index.tables and index.tables[t].column(col.name) is not None]
        if len(owners) == 1:
            out.add(owners[0])
    return out


def _repeated(select: exp.Select, tree: exp.Expression, aliases: list[str], keyed: dict[str, list[str]],
              db: Database, timeout_s: float) -> set[str]:
    """The aliases whose key repeats within some group of `select` (its joins, filters and
    grouping kept; a LEFT JOIN's NULL-extended row is no repetition)."""
    probe = select.copy()
    group = _resolved_group(select)
    probe.set("expressions", [
        exp.maybe_parse(sql, dialect=db.dialect) for i, a in enumerate(aliases) for sql in (
            f"COUNT({_key_sql(a, keyed[a])}) AS n{i}", f"COUNT(DISTINCT {_key_sql(a, keyed[a])}) AS d{i}")])
    if group:
        probe.set("group", exp.Group(expressions=group))
    for arg in ("order", "having", "limit", "offset", "qualify", "distinct", "windows"):
        probe.set(arg, None)
    with_ = _with(tree)
    if with_ is not None and select is not tree:
        probe.set("with_", with_.copy())
    outer = ("SELECT " + ", ".join(f"SUM(CASE WHEN n{i} <> d{i} THEN 1 ELSE 0 END)" for i in range(len(aliases)))
             + f" FROM ({probe.sql(dialect=db.dialect)}) AS fanout_probe")
    row = db.query(outer, 1, timeout_s).rows[0]
    return {a for i, a in enumerate(aliases) if (row[i] or 0) > 0}


def _agg_kind(agg: exp.Expression) -> str:
    if isinstance(agg, exp.Count):
        return "count_star" if isinstance(agg.this, exp.Star) or not list(agg.find_all(exp.Column)) else "count"
    return "sum" if isinstance(agg, exp.Sum) else "avg"


_DOUBLE = "DOUBLE PRECISION"  # a floating type name DuckDB, PostgreSQL and SQLite all accept
# the aggregate as written (each distinct row counted n times) and de-duplicated (once)
_WRITTEN_DEDUP = {
    "count_star": ("SUM(n)", "COUNT(*)"),
    "count": ("SUM(CASE WHEN v IS NOT NULL THEN n ELSE 0 END)", "COUNT(v)"),
    "sum": (f"SUM(CAST(v AS {_DOUBLE}) * n)", f"SUM(CAST(v AS {_DOUBLE}))"),
    "avg": (f"SUM(CAST(v AS {_DOUBLE}) * n) / SUM(CASE WHEN v IS NOT NULL THEN n END)", f"AVG(CAST(v AS {_DOUBLE}))"),
}


def _changed_by_dedup(select: exp.Select, tree: exp.Expression, agg: exp.Expression, alias: str,
                      key: list[str], db: Database, timeout_s: float) -> bool:
    """Whether counting each row of `alias` once per group (by its key) changes the
    aggregate's value in some group. The joined rows are grouped by (group, key, value) with
    their multiplicity n: the query computes its aggregate over every copy, the
    de-duplicated one over each distinct row once. AVG over rows all repeated the same
    number of times, a SUM whose repeated values are 0, or COUNT(col) over repeated NULLs
    leave the value unchanged."""
    kind = _agg_kind(agg)
    probe = select.copy()
    group = _resolved_group(select)
    value = "1" if kind == "count_star" else agg.this.sql(dialect=db.dialect)
    items = [f"{g.sql(dialect=db.dialect)} AS g{i}" for i, g in enumerate(group)]
    items += [f"{_key_sql(alias, key)} AS k", f"{value} AS v"]
    probe.set("expressions", [exp.maybe_parse(sql, dialect=db.dialect) for sql in items])
    for arg in ("group", "order", "having", "limit", "offset", "qualify", "distinct", "windows"):
        probe.set(arg, None)
    with_ = _with(tree)
    if with_ is not None and select is not tree:
        probe.set("with_", with_.copy())
    gs = ", ".join(f"g{i}" for i in range(len(group)))
    written, dedup = _WRITTEN_DEDUP[kind]
    per_row = (f"SELECT {gs + ', ' if gs else ''}k, v, COUNT(*) AS n FROM ({probe.sql(dialect=db.dialect)}) AS rows_probe "
               f"GROUP BY {gs + ', ' if gs else ''}k, v")
    per_group = (f"SELECT {written} AS w, {dedup} AS d FROM ({per_row}) AS per_row"
                 + (f" GROUP BY {gs}" if gs else ""))
    outer = ("SELECT COUNT(*) FROM (" + per_group + ") AS per_group WHERE "
             "(w IS NULL) <> (d IS NULL) OR ABS(w - d) > 1e-9 * (1 + ABS(d))")
    row = db.query(outer, 1, timeout_s).rows[0]
    return bool(row[0])


def count_entity(sql: str, db: Database, index: SchemaIndex, timeout_s: float = 10.0) -> str | None:
    """`table.column` of what a correct query's plain COUNT counts: the table whose key is
    unique in every group of the first select with a COUNT(*) or COUNT(col) (the FROM table
    when several are). An oracle declares it as the contract's entity_key, so an extra join
    that repeats those rows fails verification."""
    import sqlglot

    try:
        tree = sqlglot.parse_one(sql, read=db.dialect)
    except sqlglot.errors.SqlglotError:
        return None
    keys = _Keys(index, db, timeout_s)
    for select in tree.find_all(exp.Select):
        if not any(c.find_ancestor(exp.Select) is select and not isinstance(c.this, exp.Distinct)
                   and not isinstance(c.parent, exp.Window) for c in select.find_all(exp.Count)):
            continue
        if _outer_refs(select):
            return None
        sources = _sources(select)
        keyed = {a: k for a, t in sources.items() if (k := keys.key(t)) and len(k) == 1}
        if not keyed:
            return None
        if not select.args.get("joins"):
            alias = next(iter(sources))
            return f"{sources[alias]}.{keyed[alias][0]}" if alias in keyed else None
        try:
            unique = [a for a in keyed if a not in _repeated(select, tree, sorted(keyed), keyed, db, timeout_s)]
        except Exception:
            return None
        base = select.args.get("from_") or select.args.get("from")
        first = base.this.alias_or_name.lower() if base is not None and isinstance(base.this, exp.Table) else None
        pick = first if first in unique else (unique[0] if unique else None)
        return f"{sources[pick]}.{keyed[pick][0]}" if pick else None
    return None


def check_fanout(
    contract: OutputContract, tree: exp.Expression, db: Database, index: SchemaIndex, timeout_s: float
) -> Check:
    """Aggregates over a join must not count or sum a row more than once per group.

    COUNT(*) counts the rows of the join: some joined table's key must be unique in every
    group (else two one-to-many branches multiply). COUNT(t.col), SUM and AVG read table t:
    t's key must be unique in every group (else its rows repeat), unless COUNT groups by
    t's key (one group per entity, counting its many side on purpose). A declared
    entity_key is what every COUNT in its select counts. A repetition fails the check only
    when counting each repeated row once changes the aggregate's value in some group
    (`_changed_by_dedup`): MIN, MAX and DISTINCT aggregates are never checked, nor an aggregate
    reading a table with no known key (each of its rows may be the grain, as a line item joined
    to its order repeats the order but not itself). Every select
    is checked; a repetition probe that does not run fails the check (it cannot be shown to
    hold)."""
    keys = _Keys(index, db, timeout_s)
    entity = contract.entity_key.lower().split(".", 1) if contract.entity_key and "." in contract.entity_key else None
    passed_details, checked = [], 0
    for select in tree.find_all(exp.Select):
        if not select.args.get("joins"):
            continue
        aggs = [a for a in select.find_all(*_KEYED_AGGS)
                if a.find_ancestor(exp.Select) is select and not isinstance(a.parent, exp.Window)
                and not isinstance(a.this, exp.Distinct)]  # duplicates never change a DISTINCT aggregate
        if not aggs or _outer_refs(select):
            continue
        sources = _sources(select)
        keyed = {alias: k for alias, table in sources.items() if (k := keys.key(table))}
        group_cols = {(c.table.lower() if c.table else "", c.name.lower())
                      for g in _resolved_group(select) for c in ([g] if isinstance(g, exp.Column) else [])}
        # requirement per aggregate: at least one of these aliases is unique per group
        needs: list[tuple[exp.Expression, list[str]]] = []
        for agg in aggs:
            if isinstance(agg, exp.Count) and entity is not None:
                alias = next((a for a, t in sources.items() if t == entity[0]), None)
                tables = [alias] if alias else []
                if alias:
                    keyed[alias] = [entity[1]]
            elif isinstance(agg, exp.Count) and (isinstance(agg.this, exp.Star) or not list(agg.find_all(exp.Column))):
                if any(a not in keyed for a in sources):
                    continue  # a table with no known key may be what is counted: nothing to show
                tables = list(keyed)
            else:
                read = _agg_tables(agg, sources, index)
                if any(a not in keyed for a in read):
                    continue  # a table with no known key may be the rows' grain: nothing to show
                tables = [a for a in read if a in keyed]
            tables = [a for a in tables if a in keyed]
            if isinstance(agg, exp.Count) and any(
                len(keyed[a]) == 1 and any(c == keyed[a][0].lower() and t in ("", a) for t, c in group_cols)
                for a in tables
            ):
                continue  # one group per counted entity: the count of its many side is meant
            if tables:
                needs.append((agg, tables))
        if not needs:
            continue
        aliases = sorted({a for _, tables in needs for a in tables})
        try:
            repeated = _repeated(select, tree, aliases, keyed, db, timeout_s)
        except Exception as err:
            return Check(name="join_fanout", passed=False,
                         detail=f"the fan-out probe did not run, so the join cannot be shown not to fan out: {err}"[:300])
        checked += 1
        for agg, tables in needs:
            if not all(a in repeated for a in tables):
                continue
            try:  # repetition matters only when counting each row once would change the value
                changed = [a for a in tables if _changed_by_dedup(select, tree, agg, a, keyed[a], db, timeout_s)]
            except Exception:
                changed = tables  # the value probe did not run: the repetition stands
            if len(changed) == len(tables):
                names = ", ".join(f"{a}.{'+'.join(keyed[a])}" for a in tables)
                return Check(name="join_fanout", passed=False, detail=(
                    f"{agg.sql(dialect=db.dialect)[:80]} reads rows that the joins repeat ({names} not unique "
                    "per group): the join fans out; count DISTINCT keys or aggregate before joining"))
        passed_details.append(", ".join(a.sql(dialect=db.dialect)[:40] for a, _ in needs))
    if not checked:
        return Check(name="join_fanout", passed=True, detail="no aggregate over a join")
    return Check(name="join_fanout", passed=True, detail=f"no repeated rows under {'; '.join(passed_details)}"[:300])
