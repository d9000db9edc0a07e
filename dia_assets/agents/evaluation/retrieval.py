"""Retrieval metrics: how high a ranking puts the first item a judge accepts (schema and
catalog linking are scored this way by bench/catalog.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def reciprocal_rank(ranked: Sequence[str], acceptable: Iterable[str], k: int = 5) -> float:
    """1/r for the first acceptable item at rank r <= k (1-based, case-insensitive), else 0."""
    wanted = {a.lower() for a in acceptable}
    for r, item in enumerate(ranked[:k], start=1):
        if item.lower() in wanted:
            return 1.0 / r
    return 0.0


def mean_reciprocal_rank(rankings: Iterable[tuple[Sequence[str], Iterable[str]]], k: int = 5) -> float:
    """MRR@k over (ranking, acceptable items) pairs; 0 for none."""
    scores = [reciprocal_rank(ranked, ok, k) for ranked, ok in rankings]
    return sum(scores) / len(scores) if scores else 0.0
