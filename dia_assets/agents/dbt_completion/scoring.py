"""Spider2-DBT's `duckdb_match` (xlang-ai/Spider2, spider2-dbt/evaluation_suite/eval_utils.py),
re-implemented without pandas: what the benchmark scores is what we score.

For each table in `condition_tabs` the gold's columns at `condition_cols` (all of them when the
list is empty) must each equal, as a vector of values, SOME column of the predicted table of
the same name: column names are ignored, extra predicted columns are allowed, numbers match
within an absolute 0.01, NULL matches NULL. With `ignore_orders` each vector is sorted on its
own before the comparison (as the benchmark does, by `(is None, str(x))`). A missing predicted
table scores 0; every table must match for a 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

TOLERANCE = 1e-2  # the benchmark's absolute tolerance for numbers


@dataclass(frozen=True)
class MatchSpec:
    """One instance's `evaluation.parameters` (func `duckdb_match`)."""

    gold: str  # the gold DuckDB file name, in the instance's gold folder
    condition_tabs: list[str] | None = None
    condition_cols: list[list[int]] | None = None
    ignore_orders: list[bool] | None = None

    @classmethod
    def from_json(cls, params: dict[str, Any]) -> MatchSpec:
        return cls(gold=params["gold"], condition_tabs=params.get("condition_tabs"),
                   condition_cols=params.get("condition_cols"), ignore_orders=params.get("ignore_orders"))

    def as_json(self) -> dict[str, Any]:
        return {"func": "duckdb_match", "parameters": {
            "gold": self.gold, "condition_tabs": self.condition_tabs, "condition_cols": self.condition_cols,
            "ignore_orders": self.ignore_orders}}


@dataclass
class MatchResult:
    score: int
    tables: dict[str, str] = field(default_factory=dict)  # table -> "match" or why not


def _is_null(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) or type(v).__name__ == "Decimal"


def _sort_key(v: Any) -> tuple[bool, str]:
    return (_is_null(v), str(v))


def vectors_match(a: Sequence[Any], b: Sequence[Any], ignore_order: bool, tol: float = TOLERANCE) -> bool:
    """One gold column against one predicted column, as the benchmark's `vectors_match`."""
    if len(a) != len(b):
        return False
    if ignore_order:
        a, b = sorted(a, key=_sort_key), sorted(b, key=_sort_key)
    for x, y in zip(a, b, strict=True):
        if _is_null(x) and _is_null(y):
            continue
        if _number(x) and _number(y):
            if not math.isclose(float(x), float(y), abs_tol=tol):
                return False
        elif x != y:
            return False
    return True


def compare_table(pred: list[tuple], gold: list[tuple], condition_cols: Sequence[int] = (),
                  ignore_order: bool = False) -> bool:
    """Every selected gold column equals some predicted column (names ignored)."""
    gold_cols = list(zip(*gold, strict=True)) if gold else []
    pred_cols = list(zip(*pred, strict=True)) if pred else []
    if not gold:  # no rows: pandas keeps the columns, each an empty vector
        return not pred
    if condition_cols:
        gold_cols = [gold_cols[i] for i in condition_cols]
    return all(any(vectors_match(g, p, ignore_order) for p in pred_cols) for g in gold_cols)


def _rows(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple]:
    return con.execute(f'SELECT * FROM "{table}"').fetchall()


def duckdb_match(result: str | Path, gold: str | Path, spec: MatchSpec) -> MatchResult:
    """Score the predicted DuckDB file `result` against `gold` by `spec` (0 or 1)."""
    out = MatchResult(score=1)
    with duckdb.connect(str(gold), read_only=True) as gcon:
        tabs = spec.condition_tabs or [r[0] for r in gcon.execute("SHOW TABLES").fetchall()]
        golds = {t: _rows(gcon, t) for t in tabs}
    cols = spec.condition_cols or [[] for _ in tabs]
    orders = spec.ignore_orders or [False] * len(tabs)
    if not (len(cols) == len(orders) == len(tabs)):
        raise ValueError("condition_cols and ignore_orders must have one entry per table")
    try:
        pcon = duckdb.connect(str(result), read_only=True)
    except duckdb.Error as err:
        return MatchResult(0, {t: f"result database unreadable: {err}" for t in tabs})
    with pcon:
        for table, c, order in zip(tabs, cols, orders, strict=True):
            try:
                pred = _rows(pcon, table)
            except duckdb.Error:
                out.tables[table], out.score = "missing", 0
                continue
            if compare_table(pred, golds[table], c, order):
                out.tables[table] = "match"
            else:
                out.tables[table], out.score = "differs", 0
    return out
