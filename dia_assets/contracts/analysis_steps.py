"""Typed pipeline steps and their records: part of the analysis artifact's contract, shared by the
planner, the session, the agent and the asset."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

Op = Literal["sql", "sem_filter", "sem_extract", "sem_group", "sem_join"]
SEMANTIC_OPS: tuple[str, ...] = ("sem_filter", "sem_extract", "sem_group", "sem_join")
ROW_WISE: tuple[str, ...] = ("sem_filter", "sem_extract", "sem_group")
_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,62}$")


class Step(BaseModel):
    """One planned step. `sql` steps take `sql`; row-wise semantic steps take `table`,
    `column` and optionally `where` (a relational predicate run first, through the gate)."""

    output: str
    op: Op
    sql: str | None = None
    table: str | None = None
    column: str | None = None
    where: str | None = None
    condition: str | None = None
    fields: list[str] | dict[str, list[str] | None] | None = None
    labels: list[str] | None = None
    k: int | None = None
    instruction: str = ""
    left: str | None = None
    left_column: str | None = None
    right: str | None = None
    right_column: str | None = None

    @field_validator("output")
    @classmethod
    def _plain_name(cls, value: str) -> str:
        value = value.strip().lower()
        if not _NAME.match(value) or "__" in value:
            raise ValueError(f"step output {value!r} must be a plain lower-case name without '__'")
        return value

    def inputs(self) -> list[str]:
        """Tables this step reads (for SQL: filled by the session from the parsed statement)."""
        if self.op == "sem_join":
            return [t for t in (self.left, self.right) if t]
        return [self.table] if self.table else []


class StepRecord(BaseModel):
    """What ran: the step as executed (after optimization), its table and its cost."""

    version: int = 1
    position: int
    step: Step
    output: str
    inputs: list[str] = []
    rows: int = 0
    columns: list[str] = []
    operator: dict[str, Any] | None = Field(None, description="OperatorReport.summary() of a semantic step.")
    estimated_selectivity: float | None = None
    estimate: dict[str, Any] | None = Field(None, description="Before it ran, for a row-wise semantic step: "
                                             "rows_in, selectivity, rows_out and where they came from (basis).")
    notes: list[str] = []
    seconds: float = 0.0
    status: Literal["complete", "partial"] = Field("complete", description=(
        "partial: a model became unreachable mid-step; the step's tables hold the rows decided "
        "before (`_stage` says by whom) and the rest marked `undecided`."))
    error: str | None = None
