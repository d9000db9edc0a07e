"""Aggregates that make no sense for a column's semantic type: SUM or AVG of an identifier,
a postal code or a phone number, SUM or AVG of a code-named categorical, SUM of a year or of
a date part. Computed from the SQL tree and the Interpreter's types, no probe."""

from __future__ import annotations

import re

from sqlglot import exp

from dia_assets.agents.query.sanity.knowledge import Knowledge, resolve
from dia_assets.contracts.query_result import Check

NAME = "aggregate_semantics"
_NOT_NUMBERS = {"postal_code": "a postal code", "phone": "a phone number", "email": "an e-mail address",
                "url": "a URL"}
_CODE = re.compile(r"(_code$|^code$|_type$|_status$|^status$)")
_YEAR = re.compile(r"(^year$|_year$|^yr$)")
_DATE_PARTS = (exp.Extract, exp.Year, exp.Month, exp.Day, exp.Quarter, exp.Week)


def _why(agg: exp.Expression, know: Knowledge) -> str | None:
    arg = agg.this
    if isinstance(arg, exp.Distinct):
        return None
    kind = "SUM" if isinstance(agg, exp.Sum) else "AVG"
    if kind == "SUM" and (isinstance(arg, _DATE_PARTS) or (
            isinstance(arg, exp.Anonymous) and arg.name.lower() in ("date_part", "datepart", "strftime"))):
        return "a date part (a year or a month number) is a label, not a quantity to add up"
    ref = resolve(arg, know)
    if ref is None:
        return None
    semantic = know.semantic(ref)
    if know.is_identifier(ref):
        return f"{ref[0]}.{ref[1]} is an identifier (a key): {kind} of it means nothing; COUNT the entities"
    if semantic in _NOT_NUMBERS:
        return f"{ref[0]}.{ref[1]} is {_NOT_NUMBERS[semantic]}: {kind} of it means nothing"
    if semantic == "categorical" and _CODE.search(ref[1]):
        return f"{ref[0]}.{ref[1]} is a categorical code: {kind} of it means nothing; count per value"
    if kind == "SUM" and (_YEAR.search(ref[1]) or semantic in ("date", "timestamp", "time")):
        return f"{ref[0]}.{ref[1]} is a year or a date: SUM of it means nothing"
    return None


def check_aggregate_semantics(tree: exp.Expression, know: Knowledge) -> Check:
    for agg in tree.find_all(exp.Sum, exp.Avg):
        why = _why(agg, know)
        if why:
            return Check(name=NAME, passed=False, detail=f"{agg.sql()[:60]}: {why}")
    return Check(name=NAME, passed=True, detail="every SUM/AVG reads a quantity")
