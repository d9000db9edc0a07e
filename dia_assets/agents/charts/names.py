"""An entity's name kept whole: first, middle and last name columns of one entity become one
label column, so a chart never puts a first name on the axis and a last name in the colour.

Parts are found from column names (`first_name`, `customer_last_name`, `surname`, ...) and,
when known, the warehouse semantic type (an `id`, `email` or number is never a name part).
Parts of one entity share the rest of their name (`customer_` in `customer_first_name`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

FIRST = {"first", "given", "fore", "forename", "firstname", "givenname"}
MIDDLE = {"middle", "middlename"}
LAST = {"last", "family", "sur", "surname", "lastname", "familyname"}
SELF_NAMED = {"forename", "firstname", "givenname", "middlename", "surname", "lastname", "familyname"}
NOT_NAMES = {"id", "email", "phone", "url", "integer", "decimal", "currency", "percentage", "date", "timestamp"}
ORDER = {"first": 0, "middle": 1, "last": 2}


def _words(name: str) -> list[str]:
    """`customer_first_name`, `CustomerFirstName`, `first name` -> customer, first, name."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name)
    return [w for w in re.split(r"[^a-z0-9]+", spaced.lower()) if w]


def name_part(column: str, semantic_type: str = "") -> tuple[str, str] | None:
    """(entity prefix, part) when the column is a name part, e.g. ('customer', 'last')."""
    if semantic_type in NOT_NAMES:
        return None
    words = _words(column)
    if not ("name" in words or set(words) & SELF_NAMED):
        return None
    for part, vocab in (("first", FIRST), ("middle", MIDDLE), ("last", LAST)):
        hit = [w for w in words if w in vocab]
        if hit:
            rest = [w for w in words if w not in vocab and w != "name"]
            return "_".join(rest), part
    return None


def name_groups(columns: Sequence[str], rows: Sequence[Sequence[Any]],
                semantic_types: Mapping[str, str] | None = None) -> dict[str, list[str]]:
    """Combined column -> its parts in reading order, for entities with a first and a last name
    whose values are text."""
    types = semantic_types or {}
    by_entity: dict[str, dict[str, str]] = {}
    for i, col in enumerate(columns):
        found = name_part(col, types.get(col, ""))
        if found is None or not all(r[i] is None or isinstance(r[i], str) for r in rows):
            continue
        by_entity.setdefault(found[0], {}).setdefault(found[1], col)
    out: dict[str, list[str]] = {}
    for prefix, parts in by_entity.items():
        if "first" in parts and "last" in parts:
            label = f"{prefix}_name" if prefix else "name"
            while label in columns or label in out:
                label = f"full_{label}"
            out[label] = [parts[p] for p in sorted(parts, key=ORDER.__getitem__)]
    return out


def combine(columns: Sequence[str], rows: Sequence[Sequence[Any]],
            groups: Mapping[str, list[str]]) -> tuple[list[str], list[tuple[Any, ...]]]:
    """Columns and rows with each group's parts replaced, at its first part's place, by one
    column of the parts joined with a space (missing parts left out)."""
    if not groups:
        return list(columns), [tuple(r) for r in rows]
    idx = {c: i for i, c in enumerate(columns)}
    parts_of = {parts[0]: label for label, parts in groups.items()}
    dropped = {p for parts in groups.values() for p in parts[1:]}
    out_cols: list[str] = []
    plan: list[int | list[int]] = []
    for c in columns:
        if c in dropped:
            continue
        if c in parts_of:
            label = parts_of[c]
            out_cols.append(label)
            plan.append([idx[p] for p in groups[label]])
        else:
            out_cols.append(c)
            plan.append(idx[c])
    out_rows = []
    for r in rows:
        out_rows.append(tuple(
            (" ".join(str(r[i]) for i in p if r[i] not in (None, "")) or None) if isinstance(p, list) else r[p]
            for p in plan))
    return out_cols, out_rows
