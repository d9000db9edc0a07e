"""Grain mismatch: the question asks for a result "per X" / "for each X" / "by X", the query
aggregates, and no GROUP BY (nor PARTITION BY) anywhere in it groups by something named X.

X must name a table or column of the query (or a time unit) for the check to speak; ratio
questions ("average orders per customer") and ordering phrases ("sorted by", "top 5 by")
stay silent."""

from __future__ import annotations

from sqlglot import exp

from dia_assets.agents.query.sanity.knowledge import (
    Knowledge,
    name_tokens,
    question_words,
    same_word,
    sources,
)
from dia_assets.contracts.query_result import Check

NAME = "grain"
_TIME = {"year", "month", "quarter", "week", "day", "date", "hour"}
_DATED = {"date", "time", "timestamp", "day", "month", "year", "period"}
_RATIO = {"average", "avg", "mean", "ratio", "rate"}
_ORDERING = {"order", "ordered", "sort", "sorted", "rank", "ranked", "first", "last", "top", "descending",
             "ascending", "highest", "lowest", "most", "least", "largest", "smallest"}
_SKIP = {"the", "a", "an", "their", "its", "his", "her", "single", "individual"}


_PARTICIPLES = {"held", "paid", "sold", "made", "bought", "taught", "led", "won", "run", "done", "kept", "sent",
                "built", "spent", "written", "taken", "given", "owned", "placed", "served", "handled", "supplied",
                "shipped", "managed", "rented", "booked", "issued", "raised", "generated", "earned", "brought"}


_GROUPING = {"grouped", "summarized", "summarised", "aggregated", "categorized", "categorised", "classified",
             "segmented", "bucketed", "totaled", "totalled", "counted", "averaged", "divided"}


def _agentive(word: str) -> bool:
    """A past participle before "by" makes it name the agent ("placed by", "held by"), unless
    it groups ("grouped by", "counted by")."""
    if word in _GROUPING:
        return False
    return word in _PARTICIPLES or (len(word) > 4 and word.endswith("ed"))


def _named(question: str) -> list[list[str]]:
    """The word groups the question's grain phrases name (up to two words each)."""
    words = question_words(question)
    out = []
    for i, word in enumerate(words):
        if word == "per" or (word in ("each", "every") and i > 0 and words[i - 1] == "for"):
            if word == "per" and _RATIO & set(words[:i]):
                continue
        elif word == "by":
            if _ORDERING & set(words[max(0, i - 6):i]) or "top" in words:
                continue
            if i > 0 and _agentive(words[i - 1]):  # "held by the suppliers": who, not a grain
                continue
        else:
            continue
        rest = [w for w in words[i + 1:i + 4] if w not in _SKIP][:2]
        if rest:
            out.append(rest)
    return out


def _vocabulary(tree: exp.Expression, know: Knowledge) -> set[str]:
    """Words that name the query's tables and their columns."""
    out = set(_TIME)
    for table in tree.find_all(exp.Table):
        info = know.table(table.name)
        if info is not None:
            out |= name_tokens(info.name)
            for col in info.columns:
                out |= name_tokens(col.name)
    return out


def _grouped(tree: exp.Expression) -> tuple[bool, set[str]]:
    """(whether anything is grouped, words of every grouping expression and of its tables)."""
    words: set[str] = set()
    any_group = False
    items: list[exp.Expression] = []
    for select in tree.find_all(exp.Select):
        group = select.args.get("group")
        if group is not None:
            any_group = True
            items += group.expressions
        distinct = select.args.get("distinct")
        if distinct is not None:
            any_group = True
            items += select.expressions
    for window in tree.find_all(exp.Window):
        items += window.args.get("partition_by") or []
    for item in items:
        any_group = True
        words |= name_tokens(item.sql())
        if not isinstance(item, exp.Column) or name_tokens(item.name) & _DATED:
            words |= _TIME  # a computed or dated grouping (strftime, date_trunc, a date) can be any period
        select = item.find_ancestor(exp.Select)
        src = sources(select) if select is not None else {}
        for col in item.find_all(exp.Column):
            if col.table and col.table.lower() in src:
                words |= name_tokens(src[col.table.lower()])
    return any_group, words


def check_grain(tree: exp.Expression, question: str | None, know: Knowledge) -> Check:
    if not question:
        return Check(name=NAME, passed=True, detail="no question")
    has_agg = any(a.find_ancestor(exp.Window) is None for a in tree.find_all(exp.AggFunc))
    if not has_agg:
        return Check(name=NAME, passed=True, detail="no aggregate")
    vocabulary = _vocabulary(tree, know)
    grouped, words = _grouped(tree)
    for phrase in _named(question):
        named = set().union(*(same_word(w, vocabulary) for w in phrase))
        if not named or named & words:
            continue
        how = "groups by other columns" if grouped else "has no GROUP BY"
        return Check(name=NAME, passed=False, detail=(
            f"the question asks for one row per {' '.join(phrase)}, but the query {how}: "
            f"GROUP BY the {' '.join(phrase)} column"))
    return Check(name=NAME, passed=True, detail="the grouping matches the question's per/each/by")
