"""`dia ask` helpers for SQL + semantic-operator pipelines: the catalog for estimates and
schema linking, and the pipeline lines printed under the answer."""

from __future__ import annotations

from dia_assets.agents.catalog.linking import catalog_link_for
from dia_assets.agents.catalog.linking import catalog_nodes_for as catalog_for
from dia_assets.contracts.analysis_result import AnalysisResult

__all__ = ["catalog_for", "catalog_link_for", "pipeline_lines"]


def pipeline_lines(result: AnalysisResult) -> list[str]:
    if not result.steps:
        return ["pipeline: none (SQL only)"]
    lines = [f"pipeline: {len(result.steps)} steps; operators {', '.join(result.operators_used)}; "
             f"semantic model calls {result.model_calls}, cost USD {result.semantic_cost_usd:.4f}"]
    for r in result.steps:
        op = r.operator or {}
        extra = f"  stages {op['stage_mix']}" if op else ""
        lines.append(f"  {r.position}. {r.step.op:<11} -> {r.output} ({r.rows} rows){extra}")
    lines += [f"  optimization: {n}" for n in result.optimizations]
    return lines
