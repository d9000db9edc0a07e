"""Conflict detection and resolution for inserts (Data Agents §3-B2, Algorithm 1).

A conflict is two active items of the same kind, near each other in embedding space, about
the *same subject* (the same precondition probe; for preferences and for probes that test
no particular thing, the same title) with a *different claim* (normalised rule body). When a judge is configured (for example an LLM) it confirms or rejects each
rule-detected conflict and may state a preference. The policy then picks one of:

- `new_wins`: the older item is deactivated (status `superseded`);
- `old_wins`: the new item is stored but inserted as `superseded`;
- `keep_both`: both stay active; the live probe decides at use time.

Either way both are kept and linked by a `version` edge older -> newer, never overwritten.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

from dia_assets.platform.memory.models import MemoryItem, NewMemory

_SPACE = re.compile(r"\s+")
_NON_WORD = re.compile(r"[^\w*]+")


def normalize_text(text: str | None) -> str:
    """Case and whitespace do not change a rule's meaning."""
    return _SPACE.sub(" ", (text or "").strip().rstrip(".")).lower()


def conclusion_key(text: str | None) -> str:
    """Words only: rewording by case or punctuation alone does not change a conclusion."""
    return " ".join(_NON_WORD.sub(" ", (text or "").lower()).split())


def normalize_sql(sql: str | None) -> str:
    """Canonical SQL via sqlglot (identifier case, spacing, aliases); text fallback."""
    if not sql or not sql.strip():
        return ""
    text = sql.strip().rstrip(";")
    try:
        import sqlglot

        return sqlglot.parse_one(text).sql(normalize=True, comments=False)
    except Exception:
        return normalize_text(text)


def content_hash(item: NewMemory) -> str:
    """Identity of an item's content: same question/rule and same probe means a duplicate.

    Tier is left out so a promoted lesson keeps its hash; tier and kind are separate columns.
    """
    parts = [
        normalize_text(item.question) if item.question else "",
        normalize_text(item.body),  # not sqlglot: bulk imports hash 100,000 example SQLs
        normalize_sql(item.probe_sql),
    ]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:32]


class JudgeVerdict(StrEnum):
    """What a conflict judge may answer about a rule-detected candidate."""

    NO_CONFLICT = "no_conflict"
    NEW_WINS = "new_wins"
    OLD_WINS = "old_wins"
    KEEP_BOTH = "keep_both"


ConflictJudge = Callable[[NewMemory, MemoryItem], JudgeVerdict]
Resolution = Literal["new_wins", "old_wins", "keep_both"]


def probe_subject(sql: str | None) -> str | None:
    """What a probe is about, when it is about something: its canonical SQL. A probe that only
    asks whether a table has rows (no column, no filter) says nothing about a lesson's subject
    (every lesson on that table would share it): None."""
    if not sql or not sql.strip():
        return None
    try:
        import sqlglot
        from sqlglot import exp

        tree = sqlglot.parse_one(sql.strip().rstrip(";"))
        if tree.find(exp.Where) is None and tree.find(exp.Column) is None and tree.find(exp.Join) is None:
            return None
    except Exception:
        pass
    return normalize_sql(sql)


def same_subject(new: NewMemory, old: MemoryItem) -> bool:
    """Two items are about one thing when their probes test the same precondition, or (for
    a probe that tests no particular thing, and for preferences, whose title is the question
    the user answered) when their titles say the same."""
    if new.kind.value == "preference" or old.kind.value == "preference":
        return conclusion_key(new.title) == conclusion_key(old.title)
    a, b = probe_subject(new.probe_sql), probe_subject(old.probe_sql)
    if a is not None and b is not None:
        return a == b
    return conclusion_key(new.title) == conclusion_key(old.title) and (
        normalize_sql(new.probe_sql) == normalize_sql(old.probe_sql))


def is_candidate_conflict(
    new: NewMemory, old: MemoryItem, similarity: float, min_similarity: float
) -> bool:
    """Rule: the same subject (see `same_subject`), a different claim about it, and close
    enough in meaning to be about one thing. A configured judge then confirms or dismisses."""
    if similarity < min_similarity or new.kind != old.kind:
        return False
    return same_subject(new, old) and conclusion_key(new.body) != conclusion_key(old.body)


@dataclass(frozen=True)
class ConflictPolicy:
    """How conflicts are found and settled.

    strategy:
      - `recency`: the newer item wins (time-sensitive knowledge, the default);
      - `confidence`: higher effective confidence wins; within `margin` it is a tie;
      - `confirmation`: the judge's preference wins.
    Ties, and `confirmation` without a judge, keep both active.
    """

    strategy: Literal["recency", "confidence", "confirmation"] = "recency"
    neighbours: int = 10
    min_similarity: float = 0.5
    margin: float = 0.1

    def resolve(
        self, new: NewMemory, old: MemoryItem, verdict: JudgeVerdict | None
    ) -> tuple[Resolution, str]:
        """Pick the winner; returns the resolution and the rule that decided it."""
        if self.strategy == "recency":
            return "new_wins", "recency"
        if self.strategy == "confidence":
            new_conf = new.confidence
            old_conf = old.effective_confidence()
            if new_conf - old_conf > self.margin:
                return "new_wins", f"confidence {new_conf:.2f} > {old_conf:.2f}"
            if old_conf - new_conf > self.margin:
                return "old_wins", f"confidence {old_conf:.2f} > {new_conf:.2f}"
            if verdict in (JudgeVerdict.NEW_WINS, JudgeVerdict.OLD_WINS):
                return verdict.value, "confirmation (confidence tie)"  # type: ignore[return-value]
            return "keep_both", "confidence tie"
        if verdict in (JudgeVerdict.NEW_WINS, JudgeVerdict.OLD_WINS, JudgeVerdict.KEEP_BOTH):
            return verdict.value, "confirmation"  # type: ignore[return-value]
        return "keep_both", "unconfirmed"
