"""The evaluation's plain typed objects: an instance of a question set, a solver's prediction,
the scored record of one instance, and the run configuration.

Everything written to `--out` is one of these models serialized as JSON, so a resumed run,
the report and any downstream tool read the same shapes.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

EVAL_VERSION = 1

PredictionStatus = Literal["answered", "needs_clarification", "failed", "no_model", "error"]
InstanceStatus = Literal["correct", "incorrect", "broken"]
FailureClass = Literal["execution", "output_convention", "grounding", "reasoning"]
FAILURE_CLASSES: tuple[str, ...] = ("execution", "output_convention", "grounding", "reasoning")


class EvalInstance(BaseModel):
    """One question with its acceptable gold queries (any one matching suffices)."""

    id: str
    question: str
    gold_sql: list[str] = Field(min_length=1, description="Acceptable gold queries, in `dialect`.")
    db: str = Field("", description="Database id; resolved against --db (a file, folder or URL).")
    evidence: str = ""
    dialect: str = Field("duckdb", description="sqlglot dialect of the gold SQL.")
    difficulty: str | None = None
    order_matters: bool = Field(False, description="Compare rows in order (the question asks for an order).")
    decimals: int | None = Field(None, description="Round floats/decimals to this many places before comparing.")
    source: str = Field("jsonl", description="Adapter that produced it: bird, spider, defog, jsonl.")
    meta: dict[str, Any] = Field(default_factory=dict)

    def prompt(self) -> str:
        """The question as the solver sees it; BIRD-style evidence is appended as a hint."""
        if self.evidence.strip():
            return f"{self.question.strip()}\nHint: {self.evidence.strip()}"
        return self.question.strip()


class Prediction(BaseModel):
    """What a solver returns for one instance."""

    sql: str | None = None
    status: PredictionStatus = "answered"
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    error: str | None = None
    sql_source: Literal["accepted", "last_attempt", "none"] = "accepted"
    meta: dict[str, Any] = Field(default_factory=dict)


class Execution(BaseModel):
    """One executed query, summarized for the record (rows are not kept)."""

    sql: str | None = None
    ok: bool = False
    error: str | None = None
    timeout: bool = False
    columns: list[str] = Field(default_factory=list)
    row_count: int = 0
    elapsed_s: float = 0.0
    preview: list[list[Any]] = Field(default_factory=list)


class InstanceRecord(BaseModel):
    """The scored result of one instance: one line of `results.jsonl`."""

    version: int = EVAL_VERSION
    id: str
    db: str = ""
    question: str
    difficulty: str | None = None
    status: InstanceStatus
    ex: int = 0
    soft_f1: float = 0.0
    ves_reward: float | None = Field(None, description="BIRD step reward rho(tau); None when not measured.")
    time_ratio: float | None = None
    failure_class: FailureClass | None = None
    failure_detail: str = ""
    matched_gold: int | None = Field(None, description="Index of the gold alternative that matched.")
    gold: list[Execution] = Field(default_factory=list)
    pred: Execution | None = None
    prediction: Prediction | None = None
    order_matters: bool = False
    decimals: int | None = None
    broken_reason: str = ""
    extra: dict[str, Any] = Field(default_factory=dict, description="Scores of custom evaluators.")


class RunConfig(BaseModel):
    """What a run was started with; stored as `run.json` and checked on resume."""

    version: int = EVAL_VERSION
    questions: str
    db: str
    solver: str
    model: str | None = None
    workers: int = 1
    timeout_s: float = 30.0
    ves_iterations: int = 10
    decimals: int | None = None
    soft_f1_order: Literal["sorted", "executed"] = "sorted"
    started_at: str = ""
