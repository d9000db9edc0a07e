"""Answer one question with a pipeline: open the analysis session over the warehouse, run
a QueryAgent extended with `Pipelines`, write `analysis/<question_id>/` (analysis.json, trace.json, the answer,
result.parquet, steps.duckdb with every step table and its provenance)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dia_assets.agents.analysis.agent import Pipelines
from dia_assets.agents.analysis.session import AnalysisSession
from dia_assets.agents.query import (
    AgentSettings,
    QueryMemory,
    SchemaIndex,
    no_model_result,
    slug,
    write_artifacts,
)
from dia_assets.agents.semantic_ops import CascadeConfig, VectorIndex
from dia_assets.contracts.analysis_result import AnalysisResult
from dia_assets.contracts.semantic_catalog import CatalogNode
from dia_assets.platform.embeddings import Embedder, make_embedder
from dia_assets.platform.model.base import ChatFn
from dia_assets.platform.model.litellm import litellm_chat
from dia_assets.platform.settings import get_settings
from dia_assets.platform.workspace import AnalysisFiles, Workspace


def answer_with_pipeline(
    question: str,
    warehouse: str | Path,
    *,
    question_id: str | None = None,
    model: str | None = None,
    chat: ChatFn | None = None,
    workspace: str | Path | None = None,
    manifest_path: str | Path | None = None,
    memory: QueryMemory | None = None,
    settings: AgentSettings | None = None,
    cascade: CascadeConfig | None = None,
    embedder: Embedder | None = None,
    vector_index: VectorIndex | None = None,
    catalog: dict[str, CatalogNode] | None = None,
    privacy: str | None = None,
    ask_user: Any = None,
    catalog_link: Any = None,
) -> tuple[AnalysisResult, Any]:
    qid = question_id or slug(question)
    folder = Workspace(workspace).analysis(qid).folder if workspace else None
    if chat is None:
        model = model or get_settings().model
        if not model:
            result = AnalysisResult(query=no_model_result(qid, question))
            if folder is not None:
                folder.mkdir(parents=True, exist_ok=True)
                result.write(AnalysisFiles(folder).result)
            return result, None
        chat = litellm_chat(model)
    session = AnalysisSession(warehouse, embedder or make_embedder(), cascade, vector_index, catalog)
    try:
        index = SchemaIndex.build(session.db, manifest=SchemaIndex.load_manifest(manifest_path))
        pipelines = Pipelines(session)
        agent = pipelines.agent(session.db, index, chat, memory=memory, settings=settings, privacy=privacy,
                                ask_user=ask_user, catalog_link=catalog_link)
        run = agent.answer(question, qid)
        result = AnalysisResult.from_run(run.result, session.records, pipelines.plan_notes,
                                         session.warehouse_tables)
        run.trace["pipeline"] = [r.model_dump() for r in session.records]
        run.trace["optimizations"] = pipelines.plan_notes
        if folder is not None:
            result.query = write_artifacts(run.result, run.output, run.trace, folder)
            write_analysis(result, session, run.trace, folder)
    finally:
        session.close()
    return result, run


def write_analysis(result: AnalysisResult, session: AnalysisSession, trace: dict[str, Any], folder: Path) -> None:
    """analysis.json, pipeline.json and steps.duckdb (every step table with its provenance)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = AnalysisFiles(folder)
    steps_db = session.export(files.steps)
    result.artifacts = {**result.query.artifacts, "steps_duckdb": str(steps_db),
                        "analysis_json": str(files.result)}
    result.write(files.result)
    files.pipeline.write_text(json.dumps(trace.get("pipeline", []), indent=1, default=str), encoding="utf-8")
