"""COUNT(col) where the question counts rows or entities ("how many X") and the column has
NULLs in the rows counted: COUNT(col) skips them, COUNT(*) does not.

Silent when the column is on the NULL-extended side of an outer join (counting matches on
purpose), when the question names the column ("how many employees have a manager"), and
when a probe over the same FROM, WHERE and GROUP BY finds COUNT(col) = COUNT(*) everywhere."""

from __future__ import annotations

import re

from sqlglot import exp

from dia_assets.agents.query.dialects import Database
from dia_assets.agents.query.sanity.knowledge import (
    Knowledge,
    name_tokens,
    probe_select,
    question_words,
    resolve,
)
from dia_assets.contracts.query_result import Check

NAME = "count_nulls"
_HOW_MANY = re.compile(r"\b(how many|number of|count of|count the)\b")
_GENERIC = {"id", "name", "number", "no", "num", "code", "key"}


def _outer_side(select: exp.Select) -> set[str]:
    """Aliases whose rows an outer join may extend with NULLs."""
    out: set[str] = set()
    joins = select.args.get("joins") or []
    for i, join in enumerate(joins):
        side = (join.side or "").upper()
        alias = join.this.alias_or_name.lower()
        if side in ("LEFT", "FULL"):
            out.add(alias)
        if side in ("RIGHT", "FULL"):
            out |= {t.alias_or_name.lower() for t in select.find_all(exp.Table)
                    if t.find_ancestor(exp.Select) is select and t.alias_or_name.lower() != alias}
            out |= {j.this.alias_or_name.lower() for j in joins[:i]}
    return out


def _has_nulls(select: exp.Select, tree: exp.Expression, col: exp.Column, db: Database, timeout_s: float) -> bool:
    probe = probe_select(select, tree)
    probe.set("expressions", [exp.maybe_parse("COUNT(*) AS n", dialect=db.dialect),
                              exp.alias_(exp.Count(this=col.copy()), "c")])
    sql = f"SELECT SUM(CASE WHEN n <> c THEN 1 ELSE 0 END) FROM ({probe.sql(dialect=db.dialect)}) AS count_probe"
    try:
        return (db.query(sql, 1, timeout_s).rows[0][0] or 0) > 0
    except Exception:
        return False


def check_count_nulls(tree: exp.Expression, question: str | None, know: Knowledge, db: Database,
                      timeout_s: float) -> Check:
    if not question or not _HOW_MANY.search(question.lower()):
        return Check(name=NAME, passed=True, detail="the question counts no rows")
    asked = set(question_words(question))
    for count in tree.find_all(exp.Count):
        col = count.this
        if not isinstance(col, exp.Column) or isinstance(count.parent, exp.Window):
            continue
        select = count.find_ancestor(exp.Select)
        ref = resolve(col, know, select)
        if select is None or ref is None or (col.table or "").lower() in _outer_side(select):
            continue
        if (name_tokens(ref[1]) - _GENERIC) & asked:
            continue  # "how many employees have a commission": COUNT(commission_pct) is meant
        if _has_nulls(select, tree, col, db, timeout_s):
            return Check(name=NAME, passed=False, detail=(
                f"{count.sql()[:60]} skips the rows where {ref[0]}.{ref[1]} is NULL, and the question counts "
                "rows: use COUNT(*) (or COUNT of the entity's key)"))
    return Check(name=NAME, passed=True, detail="no COUNT(column) skips rows the question counts")
