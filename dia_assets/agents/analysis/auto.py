"""The Query Generator decides whether a question needs a pipeline (issue #14): when
semantic operators are usable, its loop is offered `run_pipeline` beside the SQL tools and
the prompt says when to reach for it; a question answered by SQL alone runs exactly as a
plain `answer_question` (same warehouse connection, same artifacts in `queries/<id>/`).
When the model did run a pipeline, `analysis/<id>/` holds its steps as well."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from dia_assets.agents.analysis.agent import Pipelines
from dia_assets.agents.analysis.session import AnalysisSession
from dia_assets.agents.analysis.steps import PipelineError
from dia_assets.agents.query import AgentRun, QueryAgent, answer_question, checked_question_id, slug
from dia_assets.agents.semantic_ops import CascadeConfig, VectorIndex
from dia_assets.contracts.analysis_result import AnalysisResult
from dia_assets.contracts.query_result import QueryResult
from dia_assets.contracts.semantic_catalog import CatalogNode
from dia_assets.platform.embeddings import Embedder, make_embedder
from dia_assets.platform.settings import get_settings
from dia_assets.platform.sql.gate import privacy_mode
from dia_assets.platform.warehouse.base import target_dialect
from dia_assets.platform.warehouse.duckdb import DUCKDB
from dia_assets.platform.workspace import Workspace


def pipelines_unavailable(warehouse: str | Path, privacy: str | None = None, allow_writes: bool = False,
                          model: str | None = None, chat: Any = None) -> str | None:
    """Why semantic operators cannot be offered for this question, or None when they can."""
    text = str(warehouse)
    if target_dialect(text) is not DUCKDB:
        return "pipelines run over a DuckDB warehouse only"
    mode = privacy_mode(privacy)
    if mode != "samples":
        return f"semantic operators send data values to a model; privacy mode {mode!r} forbids it (DIA_PRIVACY=samples)"
    if allow_writes:
        return "a modification (--allow-writes) is answered with SQL alone"
    if chat is None and not (model or get_settings().model):
        return "no model configured (DIA_MODEL)"
    return None


def answer(
    question: str,
    warehouse: str | Path,
    *,
    pipelines: bool | None = None,
    model: str | None = None,
    chat: Any = None,
    workspace: str | Path | None = None,
    cascade: CascadeConfig | None = None,
    embedder: Callable[[], Embedder] | None = None,
    vector_index: VectorIndex | None = None,
    catalog: dict[str, CatalogNode] | None = None,
    **kwargs: Any,
) -> tuple[QueryResult, AgentRun | None, AnalysisResult | None]:
    """Answer `question`; `pipelines` None lets the agent decide, True requires pipelines
    to be usable (PipelineError says why not), False keeps to SQL. The AnalysisResult is
    there only when a pipeline ran. `embedder` is a factory: nothing loads until needed."""
    reason = pipelines_unavailable(warehouse, kwargs.get("privacy"), kwargs.get("allow_writes", False), model, chat)
    if pipelines is True and reason:
        raise PipelineError(f"pipelines not available: {reason}")
    if pipelines is False or reason:
        result, run = answer_question(question, warehouse, model=model, chat=chat, workspace=workspace, **kwargs)
        return result, run, None
    cfg = cascade or CascadeConfig()
    if cfg.strong_model is None and model:
        cfg = cfg.model_copy(update={"strong_model": model})

    def open_session() -> AnalysisSession:
        try:
            emb = (embedder or make_embedder)()
        except Exception as err:  # a tool error the model reads: it can still answer with SQL
            raise PipelineError(f"embeddings unavailable: {type(err).__name__}: {err}"[:300]) from err
        return AnalysisSession(warehouse, emb, cfg, vector_index, catalog)

    agents: list[Pipelines] = []

    def make_agent(db: Any, index: Any, chat_fn: Any, **kw: Any) -> QueryAgent:
        agents.append(Pipelines(open_session=open_session))
        return agents[-1].agent(db, index, chat_fn, **kw)

    try:
        result, run = answer_question(question, warehouse, model=model, chat=chat, workspace=workspace,
                                      agent_factory=make_agent, **kwargs)
        agent = agents[0] if agents else None
        if agent is None or agent.session is None or run is None:
            return result, run, None
        analysis = AnalysisResult.from_run(result, agent.session.records, agent.plan_notes,
                                           agent.session.warehouse_tables)
        analysis.query = result
        if workspace:
            from dia_assets.agents.analysis.run import write_analysis

            qid = kwargs.get("question_id")
            folder = Workspace(workspace).analysis(checked_question_id(qid) if qid else slug(question)).folder
            write_analysis(analysis, agent.session, run.trace, folder)
        return result, run, analysis
    finally:
        for agent in agents:
            if agent.session is not None:
                agent.session.close()
