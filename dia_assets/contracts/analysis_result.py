"""The analysis result (DESIGN §3 `analysis_result`): a query result whose answer was built
by a pipeline of SQL and semantic-operator steps. `analysis/<question_id>/analysis.json`."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from dia_assets.contracts.analysis_steps import StepRecord
from dia_assets.contracts.artifact import Artifact
from dia_assets.contracts.query_result import QueryResult

ANALYSIS_RESULT_VERSION = 1


class AnalysisResult(Artifact):
    version: int = ANALYSIS_RESULT_VERSION
    query: QueryResult
    steps: list[StepRecord] = []
    optimizations: list[str] = []
    warehouse_tables_used: list[str] = []
    operators_used: list[str] = []
    stage_mix: dict[str, int] = Field(default_factory=dict, description="Rows decided per stage, all steps.")
    model_calls: int = 0
    semantic_cost_usd: float = 0.0
    artifacts: dict[str, str] = {}

    @classmethod
    def from_run(cls, query: QueryResult, steps: list[StepRecord], notes: list[str],
                 warehouse_tables: set[str]) -> AnalysisResult:
        mix: dict[str, int] = {}
        calls, cost = 0, 0.0
        used: list[str] = []
        for r in steps:
            used += [t for t in r.inputs if t in warehouse_tables and t not in used]
            if r.operator:
                calls += int(r.operator.get("model_calls", 0))
                cost += float(r.operator.get("cost_usd", 0.0))
                for k, v in r.operator.get("stage_mix", {}).items():
                    mix[k] = mix.get(k, 0) + int(v)
        return cls(query=query, steps=steps, optimizations=notes, warehouse_tables_used=used,
                   operators_used=sorted({r.step.op for r in steps}), stage_mix=mix,
                   model_calls=calls, semantic_cost_usd=round(cost, 6))

    def summary(self) -> dict[str, Any]:
        return {"status": self.query.status, "steps": len(self.steps), "operators": self.operators_used,
                "tables": self.warehouse_tables_used, "stage_mix": self.stage_mix,
                "model_calls": self.model_calls, "semantic_cost_usd": self.semantic_cost_usd}
