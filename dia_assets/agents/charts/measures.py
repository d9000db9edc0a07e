"""What a measure may be drawn as: whether its parts add up (stackable), and which measures can
share an axis (magnitudes within a factor of `MAX_RATIO`).

Additivity is read, in order of trust, from the SQL that made the column (COUNT DISTINCT, AVG,
MIN/MAX, MEDIAN or a division are not additive; SUM and COUNT are), from the warehouse semantic
type (`percentage`), then from the column's name (`avg_`, `distinct`, `pct`, `rate`, ...).
A stack of non-additive parts draws a total that means nothing (distinct customers per country
summed over countries counts a customer once per country), so such parts are grouped instead.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

MAX_RATIO = 50.0  # measures whose largest values differ more than this get their own panels

NON_ADDITIVE_AGGREGATES = ("Avg", "Median", "Min", "Max", "Quantile", "PercentileCont", "PercentileDisc",
                           "Stddev", "StddevPop", "StddevSamp", "Variance", "VariancePop", "ApproxDistinct")
NON_ADDITIVE_WORDS = {"distinct", "unique", "avg", "average", "mean", "median", "min", "max", "minimum",
                      "maximum", "rate", "ratio", "pct", "percent", "percentage", "share", "fraction",
                      "proportion", "per", "price", "score", "rating", "age", "margin"}
NON_ADDITIVE_TYPES = {"percentage", "latitude", "longitude"}


def _words(name: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", name.lower()) if w}


def sql_aggregates(sql: str | None, dialect: str = "duckdb") -> dict[str, tuple[bool, str]]:
    """Result column -> (additive, why) from the expression that names it in the SQL; columns
    the SQL does not aggregate are left out. The outermost alias of a name wins (BFS)."""
    if not sql:
        return {}
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except Exception:  # noqa: BLE001 - a hint only: an unparsable statement gives none
        return {}
    if tree is None:
        return {}
    non_additive = tuple(getattr(exp, n) for n in NON_ADDITIVE_AGGREGATES if hasattr(exp, n))
    out: dict[str, tuple[bool, str]] = {}
    for alias in tree.find_all(exp.Alias):
        name = alias.alias
        if not name or name in out:
            continue
        body = alias.this
        distinct = [c for c in body.find_all(exp.Count) if isinstance(c.this, exp.Distinct)]
        if distinct:
            out[name] = (False, "COUNT(DISTINCT ...) in the SQL: distinct counts do not add up")
        elif (found := body.find(*non_additive)) is not None:
            out[name] = (False, f"{found.key.upper()}(...) in the SQL: not a sum of parts")
        elif any(d.find(exp.AggFunc) is not None for d in body.find_all(exp.Div)):
            out[name] = (False, "a ratio of aggregates in the SQL")
        elif body.find(exp.Sum, exp.Count) is not None:
            out[name] = (True, "SUM/COUNT in the SQL: parts add up")
    return out


def additivity(name: str, semantic_type: str = "",
               from_sql: Mapping[str, tuple[bool, str]] | None = None) -> tuple[bool, str]:
    """(additive, why) for one measure column."""
    if from_sql and name in from_sql:
        return from_sql[name]
    if semantic_type in NON_ADDITIVE_TYPES:
        return False, f"semantic type {semantic_type}"
    words = _words(name)
    if words & NON_ADDITIVE_WORDS or name.lower().startswith(("avg", "n_unique", "num_unique")):
        return False, f"the name says {', '.join(sorted(words & NON_ADDITIVE_WORDS)) or 'an average'}"
    return True, "a count or amount (nothing says otherwise)"


def magnitude(values: Sequence[Any]) -> float:
    """The largest absolute finite value (0 when there is none)."""
    out = 0.0
    for v in values:
        if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
            f = abs(float(v))
            if math.isfinite(f):
                out = max(out, f)
    return out


def panels(measures: Sequence[str], columns: Sequence[str], rows: Sequence[Sequence[Any]],
           max_ratio: float = MAX_RATIO) -> list[list[str]]:
    """Measures grouped so that within a group the largest magnitudes differ at most
    `max_ratio` times; groups in the measures' order of first appearance. One group: one axis."""
    idx = {c: i for i, c in enumerate(columns)}
    size = {m: magnitude([r[idx[m]] for r in rows]) for m in measures}
    groups: list[list[str]] = []
    for m in sorted(measures, key=lambda m: size[m], reverse=True):
        top = groups[-1][0] if groups else None
        if top is not None and (size[m] == 0 or size[top] / size[m] <= max_ratio):
            groups[-1].append(m)
        else:
            groups.append([m])
    order = {m: i for i, m in enumerate(measures)}
    return sorted(([sorted(g, key=order.__getitem__) for g in groups]), key=lambda g: order[g[0]])
