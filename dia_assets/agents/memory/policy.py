"""Thresholds for consolidation, promotion and forgetting, in one reviewable place.

Promotion is outcome-gated (DIA §3.2, App. F.1): a session lesson becomes cross-session
only when borne out on a second database, or after enough successful uses. Forgetting
(Data Agents §3-B2) is value-, time- and evidence-driven and only archives; deletion
happens on explicit request.
"""

from __future__ import annotations

from dataclasses import dataclass

from dia_assets.platform.memory.models import LESSON_TIERS, Tier


@dataclass(frozen=True)
class MaintenancePolicy:
    # consolidation: near-duplicates share kind, tier (and database for session lessons)
    # and probe, and are close both in embedding space and in wording.
    merge_similarity: float = 0.95
    merge_word_overlap: float = 0.6
    # promotion
    promote_min_scopes: int = 2
    promote_min_successes: int = 5
    promote_min_success_rate: float = 0.6
    # forgetting (never touches examples unless asked)
    forget_tiers: tuple[Tier, ...] = LESSON_TIERS
    forget_below_importance: float = 0.2
    forget_idle_days: float = 180.0
    keep_importance: float = 0.8
    forget_failed_probes: int = 3


def word_overlap(a: str, b: str) -> float:
    """Jaccard overlap of word sets: a cheap guard against merging opposite conclusions
    that an embedding model scores as similar."""
    wa, wb = set(a.lower().split()), set(b.lower().split())
    if not wa or not wb:
        return 0.0
    return len(wa & wb) / len(wa | wb)


def success_rate_ok(use_count: int, success_count: int, min_rate: float) -> bool:
    return use_count == 0 or success_count / use_count >= min_rate
