"""Held-out certification of a proxy's decisions (LOTUS's precision target, Patel et al.
2024; BARGAIN's adaptive per-threshold sampling, Zeighami et al. 2025).

A side is one value the proxy can decide (`accept`, `reject`, a class). For each side the
candidate thresholds on the proxy's confidence are tried from the strictest down (a fixed
sequence, so trying several does not inflate the error): at each one, `sample` rows are drawn
at random from the rows the proxy would decide there and were never judged (so never the rows
that trained it), the strong model judges them, and the threshold is kept only when the
Clopper-Pearson lower bound of their precision reaches the target. The first failure, or
the end of the budget, stops the sequence; a side no threshold passed decides nothing and
its rows go on to the models. Each side's statement "precision >= target" then holds with
probability >= `confidence` (one-sided), whatever the sample size: a small sample simply
cannot pass (at 0.9 and 95%, 28 right out of 28 do not).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

import numpy as np
from scipy.stats import beta

from dia_assets.agents.semantic_ops.models import SideGuarantee

GRID: tuple[float, ...] = (0.99, 0.97, 0.95, 0.9, 0.85, 0.8, 0.7, 0.6)


def sample_indices(n: int, size: int, seed: int = 0) -> list[int]:
    """A reproducible random sample of row positions (all rows when the table is small)."""
    if size >= n:
        return list(range(n))
    rng = np.random.default_rng(seed)
    return sorted(int(i) for i in rng.choice(n, size=size, replace=False))


def clopper_pearson_lower(right: int, total: int, confidence: float = 0.95) -> float:
    """Exact one-sided lower confidence bound of a binomial proportion (0 when nothing
    was right or nothing was seen)."""
    if total <= 0 or right <= 0:
        return 0.0
    return float(beta.ppf(1.0 - confidence, right, total - right + 1))


def smallest_passing(total: int, target: float, confidence: float = 0.95) -> int | None:
    """How many of `total` sampled rows must be right for the bound to reach the target."""
    for right in range(total + 1):
        if clopper_pearson_lower(right, total, confidence) >= target:
            return right
    return None


Ask = Callable[[list[int]], dict[int, Any]]


def certify(predicted: Sequence[Hashable], scores: np.ndarray, judged: set[int], ask: Ask, *,
            target: float, confidence: float, sample: int, steps: int, seed: int,
            side_name: Callable[[Hashable], str] = str, grid: Sequence[float] = GRID,
            values: Sequence[Hashable] | None = None) -> tuple[dict[int, Hashable], list[SideGuarantee]]:
    """Rows the proxy may decide (position -> its value) and one report per side.

    `predicted[i]` and `scores[i]` are the proxy's value and confidence for row i; `judged`
    holds the positions the strong model already answered (the training sample) and grows
    with every row `ask` sends to it; `ask(positions)` returns the strong model's value per
    position it answered (an unanswered row counts as wrong: the bound stays conservative).
    `values` lists the sides to report (default: those the proxy predicts)."""
    rng = np.random.default_rng(seed + 7919)
    pred = np.asarray(predicted, dtype=object)
    decided: dict[int, Hashable] = {}
    reports: list[SideGuarantee] = []
    for value in values if values is not None else sorted(set(pred.tolist()), key=str):
        side = SideGuarantee(side=side_name(value), target=target, confidence=confidence)
        of_side = np.flatnonzero(pred == value)
        tested: float | None = None
        for cut in sorted(grid, reverse=True):
            if side.tests >= steps:
                break
            if tested is not None and not any(cut <= scores[i] < tested for i in of_side):
                continue  # the same rows as the cut already passed: nothing to gain
            region = [int(i) for i in of_side if scores[i] >= cut and int(i) not in judged]
            if len(region) < sample + sample // 2:  # too few rows to be worth a test: a looser cut
                continue
            picks = sorted(int(i) for i in rng.choice(region, size=sample, replace=False))
            answers = ask(picks)
            judged.update(picks)
            right = sum(1 for i in picks if i in answers and answers[i] == value)
            bound = clopper_pearson_lower(right, sample, confidence)
            side.tests += 1
            tested = cut
            side.sampled += sample
            side.last_test = {"threshold": cut, "right": right, "sampled": sample, "lower_bound": round(bound, 4)}
            if bound < target:
                break
            side.threshold, side.right, side.checked, side.lower_bound = cut, right, sample, round(bound, 4)
        if side.threshold is not None:
            rows = [int(i) for i in of_side if scores[i] >= side.threshold and int(i) not in judged]
            decided.update({i: value for i in rows})
        reports.append(side)
    for side in reports:  # rows judged by later tests are the strong model's, not the proxy's
        side.decided = sum(1 for i, v in decided.items() if side_name(v) == side.side and i not in judged)
    return {i: v for i, v in decided.items() if i not in judged}, reports
