"""Pipeline optimization (Data Agents §III-C): cheap relational filters pushed below
row-wise semantic operators, and chains of semantic filters ordered by estimated
selectivity (most selective first, so later, costly stages see fewer rows)."""

from __future__ import annotations

from collections.abc import Callable

import sqlglot
from sqlglot import exp

from dia_assets.contracts.analysis_steps import ROW_WISE, Step

Selectivity = Callable[[Step], float]


def _pure_filter(sql: str) -> tuple[str, str] | None:
    """(table, predicate) when `sql` is `SELECT * FROM table WHERE predicate` and nothing else."""
    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.SqlglotError:
        return None
    if not isinstance(tree, exp.Select) or tree.args.get("joins") or tree.args.get("group") \
            or tree.args.get("order") or tree.args.get("limit") or tree.args.get("having") \
            or tree.args.get("with") or tree.args.get("distinct"):
        return None
    if len(tree.expressions) != 1 or not isinstance(tree.expressions[0], exp.Star):
        return None
    source = tree.args.get("from_") or tree.args.get("from")
    table = source.this if source is not None else None
    where = tree.args.get("where")
    if not isinstance(table, exp.Table) or where is None or table.args.get("db"):
        return None
    return table.name.lower(), where.this.sql("duckdb")


def _readers(steps: list[Step], name: str, sql_tables: Callable[[Step], list[str]]) -> list[int]:
    return [i for i, s in enumerate(steps) if name in (sql_tables(s) if s.op == "sql" else s.inputs())]


def push_down_filters(steps: list[Step], input_columns: Callable[[str], set[str]],
                      sql_tables: Callable[[Step], list[str]]) -> tuple[list[Step], list[str]]:
    """A SQL step that only filters a row-wise semantic step's output on the semantic step's
    *input* columns runs before it instead (as its `where`); the SQL step disappears and the
    semantic step takes its output name."""
    steps = [s.model_copy() for s in steps]
    notes: list[str] = []
    changed = True
    while changed:
        changed = False
        for i, sem in enumerate(steps):
            if sem.op not in ROW_WISE or not sem.table:
                continue
            readers = _readers(steps, sem.output, sql_tables)
            if len(readers) != 1 or steps[readers[0]].op != "sql":
                continue
            j = readers[0]
            parsed = _pure_filter(steps[j].sql or "")
            if parsed is None or parsed[0] != sem.output:
                continue
            predicate = parsed[1]
            used = {c.name.lower() for c in sqlglot.parse_one(predicate, read="duckdb").find_all(exp.Column)}
            if not used or not used <= input_columns(sem.table):
                continue
            where = f"({sem.where}) AND ({predicate})" if sem.where else predicate
            notes.append(f"pushed `{predicate}` below {sem.op} {sem.output!r} (was SQL step {steps[j].output!r})")
            steps[i] = sem.model_copy(update={"where": where, "output": steps[j].output})
            del steps[j]
            changed = True
            break
    return steps, notes


def order_semantic_filters(steps: list[Step], selectivity: Selectivity,
                           sql_tables: Callable[[Step], list[str]]) -> tuple[list[Step], list[str], dict[str, float]]:
    """In a chain `a = sem_filter(T)`, `b = sem_filter(a)` where nothing else reads `a`, run
    the more selective condition first. Output names keep their places in the chain."""
    steps = [s.model_copy() for s in steps]
    notes: list[str] = []
    estimates: dict[str, float] = {}
    for i in range(len(steps) - 1):
        a = steps[i]
        if a.op != "sem_filter":
            continue
        readers = _readers(steps, a.output, sql_tables)
        if len(readers) != 1:
            continue
        j = readers[0]
        b = steps[j]
        if b.op != "sem_filter" or b.table != a.output or b.where:
            continue
        sa, sb = selectivity(a), selectivity(b)
        estimates[a.output], estimates[b.output] = sa, sb
        if sb < sa:
            steps[i] = b.model_copy(update={"table": a.table, "where": a.where, "output": a.output})
            steps[j] = a.model_copy(update={"table": a.output, "where": None, "output": b.output})
            notes.append(f"ran {b.condition!r} (est. selectivity {sb:.2f}) before {a.condition!r} ({sa:.2f})")
    return steps, notes, estimates
