"""`dia ask --pipeline`: the Query Generator with SQL + semantic-operator pipelines."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from dia_assets.contracts.analysis_result import AnalysisResult


def _catalog(warehouse: str, store: Any) -> dict[str, Any] | None:
    """The semantic catalog's nodes for this warehouse, when the memory store has them."""
    inner = getattr(store, "store", None)
    if inner is None:
        return None
    try:
        from dia_assets.agents.catalog.store import CatalogStore
        from dia_assets.agents.memory.fingerprint import database_fingerprint

        return {n.id: n for n in CatalogStore(inner).nodes(database_fingerprint(warehouse))} or None
    except Exception:  # no catalog: estimates fall back to sampling the input
        return None


def catalog_link_for(warehouse: str, store: Any) -> Any:
    """Schema linking through the semantic catalog, when the memory store holds one for
    this warehouse; None otherwise (linking then uses names and values only)."""
    inner = getattr(store, "store", None)
    if inner is None or _catalog(warehouse, store) is None:
        return None
    from dia_assets.agents.catalog.linking import catalog_linker
    from dia_assets.agents.memory.fingerprint import database_fingerprint

    return catalog_linker(inner, database_fingerprint(warehouse))


def run_pipeline_question(question: str, warehouse: str, question_id: str | None, chat: Any, memory: Any,
                          workspace: Path, ask_user: Any) -> AnalysisResult:
    from dia_assets.agents.analysis.run import answer_with_pipeline
    from dia_assets.agents.analysis.steps import PipelineError

    try:
        result, _ = answer_with_pipeline(
            question, warehouse, question_id=question_id, chat=chat, memory=memory, workspace=workspace,
            manifest_path=workspace / "schema" / "manifest.json", catalog=_catalog(warehouse, memory),
            ask_user=ask_user, catalog_link=catalog_link_for(warehouse, memory))
    except PipelineError as err:
        typer.echo(f"error: {err}", err=True)
        raise typer.Exit(2) from err
    return result


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
