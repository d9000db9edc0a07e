"""Typed contracts of the semantic operators: cascade settings, per-row decisions and the
operator report, shared by the operators, the pipeline runner, the asset and the bench."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from dia_assets.platform.settings import get_settings

Stage = Literal["proxy", "embedding", "light", "strong", "embedding_fallback", "unresolved", "undecided"]
STAGES: tuple[str, ...] = ("proxy", "embedding", "light", "strong", "embedding_fallback", "unresolved", "undecided")
# `unresolved`: a model was asked and gave no valid answer; `undecided`: the run stopped (a
# model became unreachable) before anyone looked at the row


class CascadeConfig(BaseModel):
    """Which stages run and where they cut. With a model, a learned proxy is trained on
    `calibration_size` rows the strong model (else the light one) judges, and each side it
    decides is certified on held-out rows: up to `certify_steps` tests of `certify_sample`
    rows per side, each a Clopper-Pearson bound at `confidence` against `target_precision`.
    Fixed `upper`/`lower`/`margin` skip all that (similarity cuts, no guarantee)."""

    version: int = 1
    embedding: bool = True
    light_model: str | None = Field(default_factory=lambda: get_settings().semantic_light_model)
    strong_model: str | None = Field(
        default_factory=lambda: get_settings().semantic_strong_model or get_settings().model
    )
    upper: float | None = None
    lower: float | None = None
    margin: float | None = None
    light_confidence: float = 0.8
    target_precision: float = 0.9
    confidence: float = 0.95
    calibration_size: int = 100
    certify_sample: int = 50
    certify_steps: int = 3
    batch_size: int = 20
    candidates: int = 5
    seed: int = 0
    allow_unverified: bool = Field(False, description=(
        "Run with no model at all: rows are decided by embedding alone, on fixed thresholds, and "
        "reported unverified. Off by default: without a model every operator refuses."))

    def stage_models(self) -> dict[str, str | None]:
        return {"light": self.light_model, "strong": self.strong_model}


class Decision(BaseModel):
    """One row's outcome: the value (bool, label, fields or match), who decided it, and
    the embedding score it was decided on (None when no embedding stage ran)."""

    id: str
    value: Any = None
    stage: Stage
    score: float | None = None
    confidence: float | None = None


class StageUsage(BaseModel):
    """Calls, tokens and cost of one model stage in one operator run."""

    stage: str
    model: str | None = None
    items: int = 0
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, usage: dict[str, Any], items: int) -> None:
        self.calls += 1
        self.items += items
        self.prompt_tokens += int(usage.get("prompt_tokens") or 0)
        self.completion_tokens += int(usage.get("completion_tokens") or 0)
        self.cost_usd += float(usage.get("cost_usd") or 0.0)


class Thresholds(BaseModel):
    """The cut points used: fixed by configuration or calibrated on a judged sample."""

    upper: float | None = None
    lower: float | None = None
    margin: float | None = None
    calibrated_on: int = 0
    scorer: Literal["similarity", "proxy", "none"] = "similarity"


class SideGuarantee(BaseModel):
    """One decided side (accept, reject, a class, `field=value`): the threshold on the
    proxy's confidence that passed its held-out test, the test's figures, and how many rows
    the proxy decided there. `threshold` None = declined: those rows went to the models."""

    side: str
    target: float
    confidence: float
    threshold: float | None = None
    right: int = 0
    checked: int = 0
    lower_bound: float | None = None
    decided: int = 0
    tests: int = 0
    sampled: int = 0
    last_test: dict[str, Any] | None = None

    @property
    def estimate(self) -> float | None:
        """Precision measured on the held-out sample that opened the side."""
        return round(self.right / self.checked, 4) if self.checked else None

    @property
    def met(self) -> bool:
        return self.lower_bound is not None and self.lower_bound >= self.target


class Guarantee(BaseModel):
    """What the proxy stage promises: per side, precision >= target with probability >=
    confidence, measured on rows that never trained it; plus what it cost to know."""

    target: float
    confidence: float
    proxy: str = "none"  # which learned model decided, or none
    trained_on: int = 0
    sides: list[SideGuarantee] = Field(default_factory=list)
    decided_by_proxy: int = 0
    judged_by_model: int = 0

    def summary(self, rows_in: int) -> dict[str, Any]:
        return {
            "target": self.target, "confidence": self.confidence, "proxy": self.proxy,
            "trained_on": self.trained_on, "judged_by_model": self.judged_by_model,
            "decided_by_proxy": self.decided_by_proxy,
            "share_decided_without_strong_model": round(self.decided_by_proxy / rows_in, 4) if rows_in else 0.0,
            "sides": {s.side: {"decided": s.decided, "threshold": s.threshold, "estimate": s.estimate,
                               "lower_bound": s.lower_bound, "sampled": s.sampled} for s in self.sides},
        }


class OperatorReport(BaseModel):
    """What an operator did and what it cost: the stage mix and each model stage's usage."""

    version: int = 1
    operator: Literal["sem_filter", "sem_extract", "sem_group", "sem_join"]
    source: str
    column: str
    argument: Any = None
    output_table: str
    decisions_table: str
    rows_in: int
    rows_out: int
    stage_mix: dict[str, int] = Field(default_factory=dict)
    usage: list[StageUsage] = Field(default_factory=list)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    precision: dict[str, float] = Field(default_factory=dict, description=(
        "Estimated precision of decisions made without the strong model, by stage or stage:side "
        "(e.g. `proxy:accepted`), as the operator's calibration estimates it on held-out rows. "
        "A stage that decided rows and is absent here is unverified."))
    status: Literal["complete", "partial"] = "complete"
    error: str | None = Field(None, description="Why a partial run stopped (a model outage).")
    guarantee: Guarantee | None = None
    config: CascadeConfig

    @property
    def model_calls(self) -> int:
        return sum(u.calls for u in self.usage)

    @property
    def cost_usd(self) -> float:
        return round(sum(u.cost_usd for u in self.usage), 6)

    @property
    def tokens(self) -> int:
        return sum(u.prompt_tokens + u.completion_tokens for u in self.usage)

    def summary(self) -> dict[str, Any]:
        """The figures a trace or an asset's metadata shows."""
        return {
            "operator": self.operator, "source": self.source, "column": self.column,
            "output_table": self.output_table, "rows_in": self.rows_in, "rows_out": self.rows_out,
            "stage_mix": self.stage_mix, "model_calls": self.model_calls, "tokens": self.tokens,
            "cost_usd": self.cost_usd,
            "calls_per_stage": {u.stage: u.calls for u in self.usage},
            "thresholds": self.thresholds.model_dump(), "precision": self.precision,
            "status": self.status, "error": self.error,
            "strong_model_items": sum(u.items for u in self.usage if u.stage == "strong"),
            "strong_model_calls": sum(u.calls for u in self.usage if u.stage == "strong"),
            **({"guarantee": self.guarantee.summary(self.rows_in)} if self.guarantee else {}),
        }


class SemanticOpError(ValueError):
    """Bad input to a semantic operator (unknown table or column, empty labels...)."""


class SemanticModelMissing(SemanticOpError):
    """No model configured: an operator refuses before deciding any row (a silent
    embedding-only labelling is what this prevents)."""


def missing_model_message(operator: str) -> str:
    return (f"{operator} needs a model to judge rows and calibrate its embedding stage, and none is "
            "configured: set DIA_SEMANTIC_STRONG_MODEL (or DIA_MODEL) to a litellm model name, for "
            "example `export DIA_MODEL=ollama/qwen2.5` (DIA_SEMANTIC_LIGHT_MODEL adds a cheaper first "
            "pass); or pass allow_unverified=True with fixed thresholds to accept embedding-only "
            "decisions, reported unverified")


class SemanticModelUnavailable(RuntimeError):
    """A model stage could not be reached mid-run. It carries what was decided before it
    stopped (`decided`, plus `answers` of the failing call's earlier batches not yet turned
    into decisions), the usage so far and, once the operator has written its partial
    tables, the partial `report`."""

    def __init__(self, message: str, stage: str, answers: dict[str, Any] | None = None,
                 usage: list[StageUsage] | None = None) -> None:
        super().__init__(message)
        self.stage = stage
        self.answers: dict[str, Any] = dict(answers or {})
        self.decided: list[Decision] = []
        self.usage: list[StageUsage] = list(usage or [])
        self.report: OperatorReport | None = None

    def keep(self, decided: list[Decision], usage: list[StageUsage] | None = None) -> None:
        """Record decisions made before the failure, earlier ones first."""
        self.decided = [*decided, *self.decided]
        if usage is not None:
            self.usage = usage
