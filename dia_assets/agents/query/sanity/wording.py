"""Aggregate wording: the question names the aggregate ("average", "total", "highest",
"different") and the query computes another one.

Each rule speaks only when the question's words point one way and the query's aggregates
contradict them outright:
- "average"/"mean" stated, and the query has no AVG and no division (a ratio is an average);
- AVG in the query and no averaging word in the question (an average is a choice the question
  states: "average", "mean", "typical", or a share: "percentage", "rate");
- only words of one direction ("highest" vs "lowest"), and the query's MIN/MAX all point the
  other way with no ORDER BY to carry the direction instead;
- "different"/"distinct"/"unique" stated, a COUNT, and nothing de-duplicates (no COUNT DISTINCT,
  SELECT DISTINCT or GROUP BY under it).
Words whose direction depends on the column ("oldest", "most senior", "first") are not read."""

from __future__ import annotations

from sqlglot import exp

from dia_assets.agents.query.sanity.knowledge import question_words
from dia_assets.contracts.query_result import Check

NAME = "aggregate_wording"
_AVERAGE = {"average", "averages", "avg", "mean"}
# words under which an AVG is a fair reading: a share is the average of a 0/1 flag
_AVERAGE_LIKE = _AVERAGE | {"typical", "typically", "share", "percentage", "percent", "proportion", "fraction",
                            "rate", "ratio"}
_HIGH = {"highest", "maximum", "max", "largest", "biggest", "greatest", "longest", "latest", "priciest",
         "costliest", "heaviest", "peak"}
_LOW = {"lowest", "minimum", "min", "smallest", "fewest", "shortest", "earliest", "cheapest", "lightest"}
_DISTINCT = {"different", "distinct", "unique"}


def _aggregates(tree: exp.Expression) -> list[exp.AggFunc]:
    return list(tree.find_all(exp.AggFunc))


def _deduplicated(tree: exp.Expression) -> bool:
    """Whether anything in the query removes duplicates before or while counting."""
    if any(isinstance(c.this, exp.Distinct) for c in tree.find_all(exp.Count)):
        return True
    return any(s.args.get("distinct") is not None or s.args.get("group") is not None
               for s in tree.find_all(exp.Select) if s is not tree) or \
        (isinstance(tree, exp.Select) and tree.args.get("distinct") is not None)


def check_aggregate_wording(tree: exp.Expression, question: str | None) -> Check:
    if not question:
        return Check(name=NAME, passed=True, detail="no question text")
    words = set(question_words(question))
    aggs = _aggregates(tree)
    kinds = {type(a) for a in aggs}
    divides = any(True for _ in tree.find_all(exp.Div))
    problems: list[str] = []
    if words & _AVERAGE and aggs and exp.Avg not in kinds and not divides:
        problems.append("the question asks for an average and the query computes none")
    if exp.Avg in kinds and not words & _AVERAGE_LIKE:
        problems.append("the query averages and the question asks for no average")
    high, low = bool(words & _HIGH), bool(words & _LOW)
    ordered = any(True for _ in tree.find_all(exp.Order))
    if high != low and not ordered and kinds & {exp.Max, exp.Min}:
        if high and exp.Max not in kinds:
            problems.append("the question asks for the highest and the query takes MIN")
        if low and exp.Min not in kinds:
            problems.append("the question asks for the lowest and the query takes MAX")
    if words & _DISTINCT and exp.Count in kinds and not _deduplicated(tree):
        problems.append("the question counts different values and nothing in the query de-duplicates")
    if problems:
        return Check(name=NAME, passed=False, detail="; ".join(problems))
    return Check(name=NAME, passed=True, detail="aggregates agree with the question's words")
