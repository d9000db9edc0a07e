"""Query Generator (DIA §3.5, App. D, E): an execution-grounded, self-verifying SQL agent.

Framework-free: no Dagster imports. Typical use:

    from dia_assets.agents.query import answer_question
    result, run = answer_question("How many staff per role?", "dia_workspace/warehouse.duckdb",
                                  model="openai/gpt-5", workspace="dia_workspace")

Modules: contract (shape declaration), tools, safety, verify, policies, loop,
modification, dialects, schema (schema linking), memory (protocol + adapters), run, rechart
(`dia chart`: a stored answer charted again by the charts agent). The model
comes through `dia_assets.platform.model` (a `ChatFn`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dia_assets.platform.lazy import lazy_exports

if TYPE_CHECKING:
    from dia_assets.agents.query.dialects import open_database, transpile, transpile_all
    from dia_assets.agents.query.loop import (
        AgentRun,
        AgentSettings,
        AnswerHooks,
        AnswerRun,
        AskUser,
        QueryAgent,
        query_tools,
    )
    from dia_assets.agents.query.memory import (
        InMemoryMemory,
        Item,
        Lesson,
        QueryMemory,
        Ref,
        StoreMemory,
        warehouse_fingerprint,
    )
    from dia_assets.agents.query.policies import PreviousAnswer
    from dia_assets.agents.query.questions import load_questions, slug
    from dia_assets.agents.query.rechart import StoredAnswerError, chart_stored
    from dia_assets.agents.query.run import (
        answer_question,
        checked_question_id,
        no_model_result,
        schema_index,
        write_artifacts,
    )
    from dia_assets.agents.query.schema import ColumnInfo, SchemaIndex, TableInfo
    from dia_assets.agents.query.tools import (
        AGENT_TOOLS,
        Explorer,
        Tool,
        ToolOutput,
        capped_rows,
        refuse,
        result_bytes,
    )
    from dia_assets.agents.query.verify import count_entity

# Each name is imported from its module on first use (PEP 562), so importing the package
# (a sibling agent, the Dagster code location) loads none of them until it is used.
_EXPORTS = {
    "open_database": "dia_assets.agents.query.dialects",
    "transpile": "dia_assets.agents.query.dialects",
    "transpile_all": "dia_assets.agents.query.dialects",
    "AgentRun": "dia_assets.agents.query.loop",
    "AgentSettings": "dia_assets.agents.query.loop",
    "AskUser": "dia_assets.agents.query.loop",
    "QueryAgent": "dia_assets.agents.query.loop",
    "AnswerHooks": "dia_assets.agents.query.loop",
    "AnswerRun": "dia_assets.agents.query.loop",
    "query_tools": "dia_assets.agents.query.loop",
    "InMemoryMemory": "dia_assets.agents.query.memory",
    "Item": "dia_assets.agents.query.memory",
    "Lesson": "dia_assets.agents.query.memory",
    "QueryMemory": "dia_assets.agents.query.memory",
    "Ref": "dia_assets.agents.query.memory",
    "StoreMemory": "dia_assets.agents.query.memory",
    "warehouse_fingerprint": "dia_assets.agents.query.memory",
    "PreviousAnswer": "dia_assets.agents.query.policies",
    "load_questions": "dia_assets.agents.query.questions",
    "slug": "dia_assets.agents.query.questions",
    "answer_question": "dia_assets.agents.query.run",
    "checked_question_id": "dia_assets.agents.query.run",
    "no_model_result": "dia_assets.agents.query.run",
    "schema_index": "dia_assets.agents.query.run",
    "write_artifacts": "dia_assets.agents.query.run",
    "ColumnInfo": "dia_assets.agents.query.schema",
    "SchemaIndex": "dia_assets.agents.query.schema",
    "TableInfo": "dia_assets.agents.query.schema",
    "AGENT_TOOLS": "dia_assets.agents.query.tools",
    "Explorer": "dia_assets.agents.query.tools",
    "capped_rows": "dia_assets.agents.query.tools",
    "result_bytes": "dia_assets.agents.query.tools",
    "Tool": "dia_assets.agents.query.tools",
    "ToolOutput": "dia_assets.agents.query.tools",
    "refuse": "dia_assets.agents.query.tools",
    "count_entity": "dia_assets.agents.query.verify",
    "StoredAnswerError": "dia_assets.agents.query.rechart",
    "chart_stored": "dia_assets.agents.query.rechart",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


__all__ = [
    "AnswerHooks",
    "AnswerRun",
    "Tool",
    "ToolOutput",
    "query_tools",
    "refuse",
    "AGENT_TOOLS",
    "AgentRun",
    "AgentSettings",
    "AskUser",
    "ColumnInfo",
    "Explorer",
    "InMemoryMemory",
    "Item",
    "Lesson",
    "PreviousAnswer",
    "QueryAgent",
    "QueryMemory",
    "Ref",
    "SchemaIndex",
    "StoreMemory",
    "StoredAnswerError",
    "TableInfo",
    "answer_question",
    "capped_rows",
    "chart_stored",
    "checked_question_id",
    "count_entity",
    "load_questions",
    "no_model_result",
    "open_database",
    "result_bytes",
    "schema_index",
    "slug",
    "transpile",
    "transpile_all",
    "warehouse_fingerprint",
    "write_artifacts",
]
