"""Typed contracts of the semantic operators: cascade settings, per-row decisions and the
operator report, shared by the operators, the pipeline runner, the asset and the bench."""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, Field

Stage = Literal["embedding", "light", "strong", "embedding_fallback", "unresolved", "undecided"]
STAGES: tuple[str, ...] = ("embedding", "light", "strong", "embedding_fallback", "unresolved", "undecided")
# `unresolved`: a model was asked and gave no valid answer; `undecided`: the run stopped (a
# model became unreachable) before anyone looked at the row


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


class CascadeConfig(BaseModel):
    """Which stages run and where they cut. Thresholds left as None are calibrated on a
    sample judged by the strong model (or by the light one when the strong is off)."""

    version: int = 1
    embedding: bool = True
    light_model: str | None = Field(default_factory=lambda: _env("DIA_SEMANTIC_LIGHT_MODEL"))
    strong_model: str | None = Field(
        default_factory=lambda: _env("DIA_SEMANTIC_STRONG_MODEL") or _env("DIA_MODEL")
    )
    upper: float | None = None
    lower: float | None = None
    margin: float | None = None
    light_confidence: float = 0.8
    target_precision: float = 0.9
    calibration_size: int = 40
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
    scorer: Literal["similarity", "prototype", "none"] = "similarity"


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
        "(e.g. `embedding:accepted`), as the operator's calibration estimates it on held-out rows. "
        "A stage that decided rows and is absent here is unverified."))
    status: Literal["complete", "partial"] = "complete"
    error: str | None = Field(None, description="Why a partial run stopped (a model outage).")
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
