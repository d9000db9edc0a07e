"""Execution accuracy, soft-F1 and the Valid Efficiency Score (DIA App. A.2, after BIRD).

Rules, as in the BIRD evaluation code (`evaluation_ex.py`, `evaluation_f1.py`,
`evaluation_ves.py` of bird-bench/mini_dev) unless stated:

- EX: `set(pred_rows) == set(gold_rows)`: set semantics, so row order and duplicate rows do
  not matter, while column order does (rows are tuples). When an instance requires order
  (`order_matters`) the row lists must be equal, duplicates included. Several acceptable gold
  results: matching any one suffices. Two empty results match (BIRD: `set() == set()`).
- Values are made comparable across engines before any comparison: DECIMAL becomes the
  nearest float (`Decimal('43.92') == 43.92`), dates and times become ISO text (SQLite returns
  text), NaN a marker, lists/structs/JSON canonical JSON text. With a per-instance precision
  (`decimals`, as LiveSQLBench's `conditions.decimal`) floats and decimals are rounded half-up
  to that many places first; floats go through their shortest decimal repr so a DOUBLE and a
  DECIMAL holding the same digits round alike. Nothing else is forgiven: strings compare exactly.
- soft-F1: BIRD's `calculate_f1_score` exactly: both empty -> 1; duplicate rows dropped keeping
  the first; rows aligned by position; per aligned pair, a predicted cell counts as matched when
  it occurs anywhere in the gold row; matched, predicted-only and gold-only cells are divided by
  the gold row's width; unaligned rows count 1 to FP or FN. One choice of ours: BIRD aligns rows
  in the order the engine returned them, which on DuckDB or PostgreSQL is arbitrary without an
  ORDER BY (the same query twice can score below 1). With `sort_rows` (the runner's default for
  instances whose order does not matter) both sides are put in one canonical row order first,
  which makes the score deterministic (rows are keyed by their sorted cells, so the order does not
  depend on column order); `sort_rows=False` is BIRD's code to the letter.
- VES: tau = mean of gold_time / pred_time over the timing iterations, after dropping samples
  outside mean +- 3 std (BIRD `clean_abnormal`; with fewer than 11 samples a 3-sigma outlier is
  impossible, so BIRD runs default to 100 iterations); `ves` is mini-dev's reward VES: rho(tau)
  is 1.25 for tau >= 2, 1 for [1, 2), 0.75 for [0.5, 1), 0.5 for [0.25, 0.5), 0.25 below;
  VES = 100/N * sum(1[correct] * sqrt(rho)). `ves_ratio` is the original, uncapped definition
  (DAMO-ConvAI `evaluation_ves.py`): 100/N * sum(1[correct] * sqrt(tau)). Both are reported.
  Each instance is timed alone (a process-wide lock), so the score does not depend on --workers.
- Deviations from BIRD's code, on purpose: a blank prediction, and a write or PRAGMA statement
  that happens to return the gold's rows, score 0 here (BIRD's code scores them 1). A predictions
  file (`sandbox.py`) scores a blank or comment-only prediction as BIRD does (an empty result). BIRD times
  execute and fetch on an open connection, as we do; it does not time its connect.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from dia_assets.platform.sql.rows import Row, normalize_rows

# -- execution accuracy --------------------------------------------------------------------------


def results_match(pred: Sequence[Sequence[Any]], gold: Sequence[Sequence[Any]],
                  order_matters: bool = False, decimals: int | None = None) -> bool:
    """R = R* under the comparison rules above."""
    p, g = normalize_rows(pred, decimals), normalize_rows(gold, decimals)
    if order_matters:
        return p == g
    return set(p) == set(g)


def execution_match(pred: Sequence[Sequence[Any]], golds: Sequence[Sequence[Sequence[Any]] | None],
                    order_matters: bool = False, decimals: int | None = None) -> int | None:
    """Index of the first acceptable gold result that matches; None when none does.
    A gold alternative that did not execute is given as None and skipped."""
    for i, gold in enumerate(golds):
        if gold is not None and results_match(pred, gold, order_matters, decimals):
            return i
    return None


# -- soft-F1 -------------------------------------------------------------------------------------


def row_match(pred_row: Row, gold_row: Row) -> tuple[float, float, float]:
    """(matched, predicted-only, gold-only) cells of one aligned pair, over the gold width."""
    width = len(gold_row)
    if width == 0:
        return 0.0, float(len(pred_row) > 0), 0.0
    matches = sum(1 for v in pred_row if v in gold_row)
    pred_only = len(pred_row) - matches
    gold_only = sum(1 for v in gold_row if v not in pred_row)
    return matches / width, pred_only / width, gold_only / width


def _cell_key(value: Any) -> tuple[int, Any]:
    if value is None:
        return (0, 0)
    if isinstance(value, (bool, int, float)):
        return (1, value)
    if isinstance(value, bytes):
        return (3, value)
    return (2, str(value))


def canonical_order(rows: list[Row]) -> list[Row]:
    """Rows sorted by the sorted multiset of their cells (a total order over mixed types: NULL,
    numbers, text, bytes), so the order does not depend on the column order, which soft-F1
    itself forgives."""
    return sorted(rows, key=lambda r: (sorted(_cell_key(v) for v in r), [_cell_key(v) for v in r]))


def soft_f1(pred: Sequence[Sequence[Any]], gold: Sequence[Sequence[Any]], decimals: int | None = None,
            sort_rows: bool = False) -> float:
    """BIRD's soft-F1 of one instance (rows aligned as returned, or canonically sorted)."""
    p = list(dict.fromkeys(normalize_rows(pred, decimals)))
    g = list(dict.fromkeys(normalize_rows(gold, decimals)))
    if sort_rows:
        p, g = canonical_order(p), canonical_order(g)
    if not p and not g:
        return 1.0
    tp = fp = fn = 0.0
    for i, gold_row in enumerate(g):
        if i >= len(p):
            fn += 1
            continue
        m, po, go = row_match(p[i], gold_row)
        tp, fp, fn = tp + m, fp + po, fn + go
    fp += max(0, len(p) - len(g))
    precision = tp / (tp + fp) if tp + fp > 0 else 0.0
    recall = tp / (tp + fn) if tp + fn > 0 else 0.0
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def best_soft_f1(pred: Sequence[Sequence[Any]], golds: Sequence[Sequence[Sequence[Any]] | None],
                 decimals: int | None = None, sort_rows: bool = False) -> float:
    """With several acceptable gold results, the best one counts."""
    scores = [soft_f1(pred, g, decimals, sort_rows) for g in golds if g is not None]
    return max(scores, default=0.0)


# -- VES -----------------------------------------------------------------------------------------


def clean_abnormal(values: Sequence[float]) -> list[float]:
    """Drop samples outside (mean - 3 std, mean + 3 std), as BIRD does. When every sample is
    equal (std 0) BIRD's strict bounds drop them all and its division fails; we keep them."""
    if not values:
        return []
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    kept = [v for v in values if mean - 3 * std < v < mean + 3 * std]
    return kept or list(values)


def time_ratio(samples: Sequence[tuple[float, float]]) -> float:
    """tau = mean(gold_time / pred_time) over the cleaned samples."""
    ratios = [g / p if p > 0 else math.inf for g, p in samples]
    finite = [r for r in ratios if math.isfinite(r)]
    if not finite:
        return math.inf if ratios else 0.0
    kept = clean_abnormal(finite)
    return sum(kept) / len(kept)


def ves_reward(tau: float) -> float:
    """BIRD's step reward rho(tau); tau 0 means 'not correct' and earns nothing."""
    if tau <= 0:
        return 0.0
    if tau >= 2:
        return 1.25
    if tau >= 1:
        return 1.0
    if tau >= 0.5:
        return 0.75
    if tau >= 0.25:
        return 0.5
    return 0.25


def measure_time_ratio(run_gold: Callable[[], Any], run_pred: Callable[[], Any], iterations: int,
                       timer: Callable[[], float] = time.perf_counter) -> float:
    """Time gold and prediction alternately `iterations` times and return tau."""
    samples = []
    for _ in range(iterations):
        t0 = timer()
        run_pred()
        t1 = timer()
        run_gold()
        t2 = timer()
        samples.append((t2 - t1, t1 - t0))
    return time_ratio(samples)


# -- aggregates ----------------------------------------------------------------------------------


def ves_ratio(correct: Sequence[int], ratios: Sequence[float | None]) -> float | None:
    """The original BIRD VES (the paper's definition, uncapped): 100/N * sum(1[correct] *
    sqrt(tau)), tau the time ratio itself. None when a correct instance was not timed."""
    if not correct:
        return None
    total = 0.0
    for c, tau in zip(correct, ratios, strict=True):
        if not c:
            continue
        if tau is None or not math.isfinite(tau):
            return None
        total += math.sqrt(tau)
    return 100.0 * total / len(correct)


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def ves(correct: Sequence[int], rewards: Sequence[float | None]) -> float | None:
    """VES in percent over N instances; None when a correct instance was not timed."""
    if not correct:
        return None
    total = 0.0
    for c, r in zip(correct, rewards, strict=True):
        if not c:
            continue
        if r is None:
            return None
        total += math.sqrt(r)
    return 100.0 * total / len(correct)


def percentile(values: Sequence[float], q: float) -> float | None:
    """Linear-interpolated percentile (numpy's default), q in [0, 100]."""
    if not values:
        return None
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)
