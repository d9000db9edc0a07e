"""Every drift kind in one table: what it affects, whether it changes the schema or breaks a key,
and which setting holds its threshold. Detection (drift.py), the affected sources and columns
(DriftReport.affected) and the reactions (react.py) all read this table, so a new kind is one row
here, one detector and, when it needs one, one rule in react.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, get_args

ChangeKind = Literal[
    "source_added", "source_removed", "column_added", "column_removed", "column_renamed",
    "type_changed", "null_rate_jump", "distribution_shift", "primary_key_broken", "fk_coverage_drop",
    "duplicate_rows_grew",
]
Scope = Literal["table", "column"]  # table: every column of the source is affected; column: the named ones


@dataclass(frozen=True)
class Kind:
    """One drift kind. `thresholds`: the platform Settings fields (DIA_<FIELD>) that tune its detector."""

    name: ChangeKind
    scope: Scope
    schema: bool = False  # the warehouse's tables or columns change: re-plan the schema
    key: bool = False  # a key the warehouse relies on no longer holds: fail key_validity, ask an expert
    thresholds: tuple[str, ...] = ()


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("source_added", "table", schema=True),
    Kind("source_removed", "table", schema=True),
    Kind("column_added", "column", schema=True),
    Kind("column_removed", "column", schema=True),
    Kind("column_renamed", "column", schema=True),
    Kind("type_changed", "column", schema=True),
    Kind("null_rate_jump", "column", thresholds=("drift_null_jump",)),
    Kind("distribution_shift", "column",
         thresholds=("drift_psi", "drift_psi_min_rows", "drift_small_change", "drift_chi2_p")),
    Kind("primary_key_broken", "table", key=True),
    Kind("fk_coverage_drop", "column", key=True, thresholds=("drift_fk_drop",)),
    Kind("duplicate_rows_grew", "table", key=True),
)}
if set(KINDS) != set(get_args(ChangeKind)):  # the Literal is the table's names, for type checkers
    raise AssertionError("ChangeKind and KINDS disagree")

SCHEMA_KINDS = frozenset(k.name for k in KINDS.values() if k.schema)
KEY_KINDS = frozenset(k.name for k in KINDS.values() if k.key)
TABLE_KINDS = frozenset(k.name for k in KINDS.values() if k.scope == "table")
