"""The order of categories on an axis: by value, largest first, unless the categories have an
order of their own (bins such as `0-10`, `65+`; month or weekday names; ranks, grades, tiers),
which a reader expects to see kept.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december"]
WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
ORDINAL_WORDS = {"rank", "grade", "level", "tier", "band", "bucket", "bin", "bracket", "stage", "priority",
                 "quartile", "quintile", "decile", "percentile", "rating", "size", "step", "phase"}
BIN = re.compile(r"^\s*(?:[<>]=?|under|over|below|above|up to)?\s*[$€£]?\s*(-?\d[\d,]*(?:\.\d+)?)", re.I)


def _words(name: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", name.lower()) if w}


def _calendar(values: Sequence[str], names: list[str]) -> list[int] | None:
    """Index of each value in `names`, by full name or its first three letters ("Mar")."""
    full = {n: i for i, n in enumerate(names)} | {n[:3]: i for i, n in enumerate(names)}
    keys = [full.get(v.strip().lower().rstrip(".")) for v in values]
    return None if any(k is None for k in keys) else keys  # type: ignore[return-value]


def natural_keys(values: Sequence[Any]) -> list[float] | None:
    """Sort keys of categories that carry their own order (bins, months, weekdays), else None."""
    texts = [str(v) for v in values if v is not None]
    if not texts or len(texts) != len(values):
        return None
    for names in (MONTHS, WEEKDAYS):
        cal = _calendar(texts, names)
        if cal is not None:
            return [float(k) for k in cal]
    keys: list[float] = []
    for t in texts:
        m = BIN.match(t)
        if m is None:
            return None
        k = float(m.group(1).replace(",", ""))
        # "<18" before "18-25"; "65+" after "55-64"
        low = t.strip().lower().startswith(("<", "under", "below", "up to"))
        keys.append(k - 0.5 if low else k)
    return keys


def is_ordinal(name: str, values: Sequence[Any]) -> bool:
    """Text categories with an order of their own: by their values or by the column's name."""
    texts = [v for v in values if v is not None]
    if not texts or not all(isinstance(v, str) for v in texts):
        return False
    return natural_keys(texts) is not None or bool(_words(name) & ORDINAL_WORDS)


def _number(v: Any) -> float | None:
    if isinstance(v, (int, float, Decimal)) and not isinstance(v, bool):
        f = float(v)
        return f if math.isfinite(f) else None
    return None


def category_order(categories: Sequence[Any], totals: Sequence[Any], ordinal: bool) -> list[Any]:
    """Distinct categories in drawing order: their own order when ordinal (natural keys, else
    first appearance), otherwise by total descending (ties by first appearance)."""
    first: dict[Any, int] = {}
    total: dict[Any, float] = {}
    for i, (c, t) in enumerate(zip(categories, totals, strict=True)):
        first.setdefault(c, i)
        n = _number(t)
        if n is not None:
            total[c] = total.get(c, 0.0) + n
    distinct = list(first)
    if ordinal:
        keys = natural_keys(distinct)
        if keys is None:
            return distinct
        return [c for _, c in sorted(zip(keys, distinct, strict=True), key=lambda kc: kc[0])]
    return sorted(distinct, key=lambda c: (c not in total, -total.get(c, 0.0), first[c]))
