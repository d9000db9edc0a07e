"""INNER joins that drop rows the question's wording keeps: "all customers", "every film",
"including those without orders", "even if none".

The kept side is the select's FROM table, named in the question (after "all"/"every", or
anywhere when the question says "including"/"even if"/"with or without"). Fires only when the
data shows it: the same select with that join made LEFT (WHERE kept) returns more rows."""

from __future__ import annotations

import re

from sqlglot import exp

from dia_assets.agents.query.dialects import Database
from dia_assets.agents.query.sanity.knowledge import (
    Knowledge,
    name_tokens,
    probe_select,
    question_words,
    same_word,
)
from dia_assets.contracts.query_result import Check

NAME = "inner_join_drops"
_INCLUDE = re.compile(r"\b(including|include|even if|even those|even when|with or without|regardless of"
                      r"|or none|if any|zero|no \w+ at all)\b")
_ALL = {"all", "every"}


def _kept(question: str, table: str) -> bool:
    """The question keeps every row of `table`: it names it after all/every, or names it and
    says the rows without a match count too."""
    words = question_words(question)
    names = name_tokens(table)
    if not names:
        return False
    for i, word in enumerate(words):
        if word in _ALL and any(same_word(w, names) for w in words[i + 1:i + 4]):
            return True
    return bool(_INCLUDE.search(question.lower())) and any(same_word(w, names) for w in words)


def _count(select: exp.Select, tree: exp.Expression, db: Database, timeout_s: float) -> int | None:
    probe = probe_select(select, tree)
    probe.set("group", None)
    probe.set("expressions", [exp.maybe_parse("COUNT(*) AS n", dialect=db.dialect)])
    try:
        return int(db.query(probe.sql(dialect=db.dialect), 1, timeout_s).rows[0][0] or 0)
    except Exception:
        return None


def check_inner_joins(tree: exp.Expression, question: str | None, know: Knowledge, db: Database,
                      timeout_s: float) -> Check:
    if not question:
        return Check(name=NAME, passed=True, detail="no question")
    for select in tree.find_all(exp.Select):
        base = select.args.get("from_") or select.args.get("from")
        joins = select.args.get("joins") or []
        if base is None or not isinstance(base.this, exp.Table) or not joins:
            continue
        kept = base.this.name.lower()
        if know.table(kept) is None or not _kept(question, kept):
            continue
        inner = [i for i, j in enumerate(joins) if not (j.side or "") and (j.kind or "").upper() in ("", "INNER")
                 and j.args.get("on") is not None]
        if not inner:
            continue
        before = _count(select, tree, db, timeout_s)
        for i in inner:
            left = select.copy()
            left.args["joins"][i].set("side", "LEFT")
            left.args["joins"][i].set("kind", None)
            after = _count(left, tree, db, timeout_s)
            if before is not None and after is not None and after > before:
                target = joins[i].this.alias_or_name
                return Check(name=NAME, passed=False, detail=(
                    f"the question keeps every {kept} row, but the INNER JOIN to {target} drops "
                    f"{after - before} of them: use LEFT JOIN (and COALESCE the aggregates)"))
    return Check(name=NAME, passed=True, detail="no INNER join drops rows the question keeps")
