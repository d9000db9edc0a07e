"""Is the first record a header? Decided by types, as DuckDB's sniffer does.

A first row whose values fit the types of the remaining rows is data (`1,John,2020-01-01`). When
every column is text the types cannot tell; the first row is then data only if its values have the
shapes of the rest (or repeat a value of the rest), and the decision is reported as uncertain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TYPES: list[tuple[str, re.Pattern[str]]] = [
    ("boolean", re.compile(r"(?i)true|false|t|f|yes|no|y|n")),
    ("hex", re.compile(r"0[xX][0-9A-Fa-f]+")),
    ("integer", re.compile(r"[+-]?\d+")),
    ("decimal", re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")),
    ("date", re.compile(r"\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[/.]\d{1,2}[/.]\d{2,4}")),
    ("timestamp", re.compile(r"\d{4}-\d{1,2}-\d{1,2}[ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:?\d{2}|Z)?")),
    ("time", re.compile(r"\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?")),
]
# Labels that read as column names: snake_case, camelCase, or an id/name/date word.
NAME_LIKE = re.compile(r"_|[a-z][A-Z]|(?i:^(id|name|date|code|type|key)$|id$)")
# A wider type accepts the values of a narrower one.
WIDER = {"integer": {"decimal"}, "date": {"timestamp"}}


@dataclass
class HeaderDecision:
    header: bool
    certain: bool
    reason: str
    overruled: str | None = None  # a schema file's header-skip the file contradicts, and why


def value_types(value: str) -> set[str]:
    value = value.strip()
    fits = {name for name, regex in TYPES if regex.fullmatch(value)}
    for narrow, wide in WIDER.items():
        if narrow in fits:
            fits |= wide
    return fits


def column_type(values: list[str]) -> str:
    """The narrowest type every non-empty value fits, else text."""
    present = [v for v in values if v.strip()]
    if not present:
        return "empty"
    common = set.intersection(*(value_types(v) for v in present))
    for name, _ in TYPES:
        if name in common:
            return name
    return "text"


def shape(value: str) -> str:
    """`John Smith` -> `Aa Aa`, `first_name` -> `a_a`, `AB-12` -> `A-9`, `Zoë` -> `Aa`."""
    out = "".join(
        ("A" if c.isupper() else "a") if c.isalpha() else "9" if c.isdigit() else c for c in value.strip()
    )
    return re.sub(r"(.)\1+", r"\1", out)


def decide(records: list[list[str]]) -> HeaderDecision:
    """Header or data, from the first record against the rest of the sample."""
    first, rest = records[0], records[1:]
    if not rest:
        labels = looks_like_labels(first)
        named = labels and any(NAME_LIKE.search(v) for v in first)
        return HeaderDecision(labels, not labels or named, "a single record: header only, or one row of data")
    columns = [[r[i] for r in rest if i < len(r)] for i in range(len(first))]
    types = [column_type(col) for col in columns]
    typed = [i for i, t in enumerate(types) if t not in ("text", "empty")]
    judged = [i for i in typed if first[i].strip()]
    if judged:
        misfit = [i for i in judged if types[i] not in value_types(first[i])]
        if misfit:
            # A header misfits every typed column; a dirty first data row only some of them.
            certain = len(misfit) == len(judged) or len(misfit) >= 3
            reason = f"first-row value {first[misfit[0]]!r} is not {types[misfit[0]]}"
            if certain:
                return HeaderDecision(True, True, reason)
            return HeaderDecision(len(misfit) * 2 >= len(judged), False,
                                  f"{reason}, but {len(judged) - len(misfit)} of {len(judged)} typed values fit")
        return HeaderDecision(False, True, "first-row values fit the types of the other rows")
    if not looks_like_labels(first):
        return HeaderDecision(False, True, "first row has numeric or missing labels")
    repeated = [v for v, col in zip(first, columns, strict=False) if v.strip() and v in col]
    if repeated:
        return HeaderDecision(False, True, f"first-row value {repeated[0]!r} recurs in its column")
    # Each column whose other values share one or two shapes votes: a first value of another
    # shape reads as a label, one of the same shape as data. Free-text columns abstain.
    header_votes = data_votes = 0
    for value, col in zip(first, columns, strict=False):
        shapes = {shape(x) for x in col if x.strip()}
        if not value.strip() or not shapes or len(shapes) > 2:
            continue
        if shape(value) in shapes:
            data_votes += 1
        else:
            header_votes += 1
    if header_votes and not data_votes:
        return HeaderDecision(True, True, "first-row values have shapes unlike the rest of their columns")
    if data_votes and not header_votes:
        return HeaderDecision(True, False, "every column is text and the first row has the shapes of the rest")
    return HeaderDecision(True, False, "every column is text; the first row's shapes do not settle it")


def looks_like_labels(first: list[str]) -> bool:
    """Distinct, mostly non-empty, non-numeric labels."""
    labels = [cell.strip() for cell in first]
    filled = [label for label in labels if label]
    if len(filled) < max(1, len(labels) / 2) or len(set(filled)) < len(filled) * 0.5:
        return False
    return not any(value_types(label) & {"integer", "decimal", "hex", "date", "timestamp"} for label in filled)
