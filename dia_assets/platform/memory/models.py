"""Data contracts of the shared memory (DESIGN §6): what agents write, read and get back."""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

CONTRACT_VERSION = 1


class Tier(StrEnum):
    """The three tiers of DIA App. F: episodic examples, session and cross-session lessons."""

    EXAMPLE = "example"
    SESSION = "session"
    CROSS_SESSION = "cross_session"


LESSON_TIERS: tuple[Tier, ...] = (Tier.SESSION, Tier.CROSS_SESSION)


class Kind(StrEnum):
    """Recurring failure structures a rule addresses (DIA §4.5, App. F.2)."""

    JOIN = "join"
    AGGREGATION = "aggregation"
    FILTER = "filter"
    OUTPUT_CONVENTION = "output_convention"
    GROUNDING = "grounding"
    FORMULA = "formula"
    PREFERENCE = "preference"


class Status(StrEnum):
    """Items are never silently overwritten: losers become superseded, stale ones archived."""

    ACTIVE = "active"
    SUPERSEDED = "superseded"
    ARCHIVED = "archived"


def utcnow() -> datetime:
    return datetime.now(UTC)


class Evidence(BaseModel):
    """One observation (or bookkeeping record) that backs an item; kept verbatim for review."""

    version: int = CONTRACT_VERSION
    text: str
    source: Literal["observation", "outcome", "promotion", "merge", "duplicate", "import"] = (
        "observation"
    )
    scope: str | None = None
    recorded_at: datetime = Field(default_factory=utcnow)

    def key(self) -> tuple[str, str, str | None]:
        """Identity used to de-duplicate evidence when items are merged."""
        return (self.text.strip(), self.source, self.scope)


class NewMemory(BaseModel):
    """What an agent writes: a conditional rule with its probe and evidence, or an example pair.

    For lessons `body` is the rule text and `probe_sql` the precondition check that must
    confirm on the current database before the rule is used. For examples `body` is the
    SQL and `question` the natural-language question.
    """

    version: int = CONTRACT_VERSION
    tier: Tier = Tier.SESSION
    kind: Kind
    title: str = Field(min_length=1, max_length=500)
    body: str = Field(min_length=1)
    probe_sql: str | None = None
    evidence: list[Evidence] = Field(default_factory=list)
    scope: str = ""
    question: str | None = None
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    notes: dict[str, str] = Field(default_factory=dict)

    @field_validator("evidence", mode="before")
    @classmethod
    def _coerce_evidence(cls, value: Any) -> Any:
        """Agents may pass plain strings; store them as observations."""
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list):
            return [{"text": v} if isinstance(v, str) else v for v in value]
        return value

    @model_validator(mode="after")
    def _lessons_need_probes(self) -> NewMemory:
        """A lesson is only usable after its probe confirms, so a lesson without one is useless."""
        if self.tier in LESSON_TIERS and not (self.probe_sql and self.probe_sql.strip()):
            raise ValueError("session and cross_session lessons need a precondition probe_sql")
        return self

    def embedding_text(self) -> str:
        """The text whose embedding represents the item: questions for examples, rules else."""
        if self.tier == Tier.EXAMPLE and self.question:
            return self.question
        return f"{self.title}\n{self.body}"


class MemoryItem(NewMemory):
    """A stored item with its bookkeeping."""

    id: int
    status: Status = Status.ACTIVE
    content_hash: str
    use_count: int = 0
    success_count: int = 0
    verify_pass_count: int = 0
    verify_fail_count: int = 0
    created_at: datetime
    updated_at: datetime
    last_used_at: datetime | None = None
    last_verified_at: datetime | None = None

    @model_validator(mode="after")
    def _lessons_need_probes(self) -> MemoryItem:
        """Stored rows are trusted as they are (validation happened on insert)."""
        return self

    def effective_confidence(self) -> float:
        """Writer confidence updated by outcomes: a Beta-style mean with prior weight 2."""
        return (2.0 * self.confidence + self.success_count) / (2.0 + self.use_count)


class MemoryRef(BaseModel):
    """What retrieval returns: a reference, not the body (DIA §3.2: memory is pull-based)."""

    version: int = CONTRACT_VERSION
    id: int
    title: str
    score: float
    tier: Tier
    kind: Kind
    scope: str
    similarity: float = 0.0
    text_score: float = 0.0
    recency: float = 0.0
    importance: float = 0.0


class ConflictRecord(BaseModel):
    """One conflict found on insert and how the policy resolved it."""

    other_id: int
    resolution: Literal["new_wins", "old_wins", "keep_both"]
    rule: str
    similarity: float


class InsertResult(BaseModel):
    """Outcome of an insert: a new row, or the existing row it duplicated."""

    version: int = CONTRACT_VERSION
    id: int
    action: Literal["inserted", "duplicate"]
    status: Status = Status.ACTIVE
    conflicts: list[ConflictRecord] = Field(default_factory=list)


class ImportReport(BaseModel):
    """Bulk example import figures."""

    version: int = CONTRACT_VERSION
    read: int
    inserted: int
    duplicates: int
    reindexed: bool
    seconds: dict[str, float] = Field(default_factory=dict)


VerificationOutcome = Literal["confirmed", "refuted", "error", "no_probe"]


class VerificationResult(BaseModel):
    """A probe run against the current database; only `usable` items may change an answer."""

    version: int = CONTRACT_VERSION
    item_id: int
    outcome: VerificationOutcome
    usable: bool
    scope: str | None = None
    detail: str = ""


class VersionEdge(BaseModel):
    """An edge of the version graph (Data Agents Algorithm 1): older -> newer, or merged."""

    src_id: int
    dst_id: int
    relation: Literal["version", "merged_into", "promoted"]
    detail: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime


class MaintenanceChange(BaseModel):
    """One change made by consolidation, promotion or forgetting (shown in asset metadata)."""

    action: Literal["merged", "promoted", "archived", "deleted"]
    item_id: int
    into_id: int | None = None
    reason: str = ""


class MaintenanceReport(BaseModel):
    """What a maintenance pass changed, plus counts per tier and kind afterwards."""

    version: int = CONTRACT_VERSION
    changes: list[MaintenanceChange] = Field(default_factory=list)
    counts: dict[str, dict[str, int]] = Field(default_factory=dict)

    def count(self, action: str) -> int:
        return sum(1 for c in self.changes if c.action == action)
