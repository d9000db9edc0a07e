"""The query result contract (DESIGN §5): what the Query Generator writes per question.

`queries/<question_id>/trace.json` carries the full loop; this model is the summary the
Dagster asset, the CLI and downstream agents read.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from dia_assets.contracts.artifact import Artifact
from dia_assets.contracts.chart import ChartSpec

QUERY_RESULT_VERSION = 1

Status = Literal["answered", "needs_clarification", "failed", "no_model"]


class OrderItem(BaseModel):
    column: str
    direction: Literal["asc", "desc"] = "asc"


class FilterSpec(BaseModel):
    """One constraint from the question. `column` (and `value` when the question names one)
    let the verifier find the predicate that implements it on the sqlglot tree."""

    description: str
    column: str | None = None
    op: str | None = Field(None, description="=, <>, <, <=, >, >=, in, like, between, is null ...")
    value: Any = None


class Granularity(BaseModel):
    description: str = Field("", description="One row per ... (entity, group, time bucket).")
    key_columns: list[str] = Field(default_factory=list, description="Result columns unique per row.")


class OutputContract(BaseModel):
    """The expected result shape kappa = (columns, granularity, order, filters), DIA §3.5.

    For modification tasks: the target objects and a post-condition SQL whose first value is
    truthy exactly when the intended change holds."""

    kind: Literal["analytical", "modification"] = "analytical"
    columns: list[str] = Field(default_factory=list)
    granularity: Granularity = Granularity()
    order: list[OrderItem] = Field(default_factory=list)
    filters: list[FilterSpec] = Field(default_factory=list)
    entity_key: str | None = Field(
        None, description="table.column of the entity being counted (join fan-out check)."
    )
    allow_empty: bool = False
    limit: int | None = Field(None, ge=0, description="Top-k questions: at most this many rows (the outer LIMIT).")
    targets: list[str] = Field(default_factory=list, description="Tables a modification changes.")
    post_condition_sql: str | None = None


class ContractRevision(BaseModel):
    """A contract declared again within one answer: which declared fact was wrong, and why."""

    after_failure: list[str] = Field(default_factory=list, description="Checks that failed just before.")
    revises: list[str] = Field(default_factory=list, description="Contract parts changed (columns, filters, ...).")
    reason: str = ""
    before: str = ""
    after: str = ""


class Check(BaseModel):
    name: str
    passed: bool
    detail: str = ""


class Verification(BaseModel):
    passed: bool = Field(False, description="Every check passed; covers the checks only.")
    checks: list[Check] = Field(default_factory=list)
    unverified: list[str] = Field(default_factory=list, description=(
        "What the checks do not cover: semantic steps that decided rows without the strong model, "
        "each with the operator's estimated precision or 'unverified'."))

    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]


class Usage(BaseModel):
    """Every model call's tokens, cost (litellm's cost tracking) and latency, summed."""

    model: str | None = None
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float = 0.0
    model_latency_s: float = 0.0

    def add(self, call: dict[str, Any]) -> None:
        self.model_calls += 1
        self.prompt_tokens += int(call.get("prompt_tokens") or 0)
        self.completion_tokens += int(call.get("completion_tokens") or 0)
        self.total_tokens = self.prompt_tokens + self.completion_tokens
        self.cost_usd = round(self.cost_usd + float(call.get("cost_usd") or 0.0), 8)
        self.model_latency_s = round(self.model_latency_s + float(call.get("latency_s") or 0.0), 4)
        self.model = call.get("model") or self.model


class MemoryUse(BaseModel):
    id: str
    title: str
    verified: bool
    detail: str = ""


class Clarification(BaseModel):
    question: str
    answer: str | None = None


class ModificationOutcome(BaseModel):
    statements: list[str] = Field(default_factory=list)
    post_condition_sql: str | None = None
    scratch_passed: bool = False
    applied: bool = False
    detail: str = ""


class QueryResult(Artifact):
    version: int = QUERY_RESULT_VERSION
    question_id: str
    question: str
    status: Status
    message: str = ""
    sql: str | None = None
    dialect: str = "duckdb"
    transpiled: dict[str, str] = Field(default_factory=dict, description="The SQL in other dialects.")
    contract: OutputContract | None = None
    verification: Verification = Verification()
    attempts: int = 0
    contract_revisions: list[ContractRevision] = Field(default_factory=list)
    row_count: int = 0
    columns: list[str] = Field(default_factory=list)
    preview: list[list[Any]] = Field(default_factory=list)
    answer: str = ""
    lineage: dict[str, list[str]] = Field(
        default_factory=dict, description="Result column -> warehouse table.column it derives from (sqlglot)."
    )
    reads: dict[str, list[str]] = Field(
        default_factory=dict, description="Warehouse table -> columns the SQL read anywhere (sqlglot scopes).")
    memory_used: list[MemoryUse] = Field(default_factory=list)
    lessons_written: list[str] = Field(default_factory=list)
    clarifications: list[Clarification] = Field(default_factory=list)
    modification: ModificationOutcome | None = None
    tokens: Usage = Usage()
    latency_s: float = 0.0
    overhead_s: float = Field(0.0, description="Agent time outside model calls.")
    privacy: str = Field("samples", description="DIA_PRIVACY mode the answer ran under.")
    warnings: list[str] = Field(
        default_factory=list, description="Degradations that did not cost the answer (e.g. lesson not recorded)."
    )
    chart: ChartSpec | None = Field(None, description="The Visualization agent's chart (queries/<id>/chart.json).")
    artifacts: dict[str, str] = Field(default_factory=dict)

