"""Query Generator (DIA §3.5, App. D, E): an execution-grounded, self-verifying SQL agent.

Framework-free: no Dagster imports. Typical use:

    from dia_assets.agents.query import answer_question
    result, run = answer_question("How many staff per role?", "dia_workspace/warehouse.duckdb",
                                  model="openai/gpt-5", workspace="dia_workspace")

Modules: contract (shape declaration), tools, safety, verify, policies, loop,
modification, dialects, schema (schema linking), memory (protocol + adapters), run. The model
comes through `dia_assets.platform.model` (a `ChatFn`).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dia_assets.agents.query.dialects import open_database, transpile, transpile_all
    from dia_assets.agents.query.loop import AgentRun, AgentSettings, QueryAgent
    from dia_assets.agents.query.memory import (
        InMemoryMemory,
        Item,
        Lesson,
        QueryMemory,
        Ref,
        StoreMemory,
    )
    from dia_assets.agents.query.policies import PreviousAnswer
    from dia_assets.agents.query.run import (
        answer_question,
        load_questions,
        schema_index,
        write_artifacts,
    )
    from dia_assets.agents.query.schema import SchemaIndex

# Each name is imported from its module on first use (PEP 562), so importing one
# submodule (the Dagster code location, a run worker) does not import them all.
_EXPORTS = {
    "open_database": "dia_assets.agents.query.dialects",
    "transpile": "dia_assets.agents.query.dialects",
    "transpile_all": "dia_assets.agents.query.dialects",
    "AgentRun": "dia_assets.agents.query.loop",
    "AgentSettings": "dia_assets.agents.query.loop",
    "QueryAgent": "dia_assets.agents.query.loop",
    "InMemoryMemory": "dia_assets.agents.query.memory",
    "Item": "dia_assets.agents.query.memory",
    "Lesson": "dia_assets.agents.query.memory",
    "QueryMemory": "dia_assets.agents.query.memory",
    "Ref": "dia_assets.agents.query.memory",
    "StoreMemory": "dia_assets.agents.query.memory",
    "PreviousAnswer": "dia_assets.agents.query.policies",
    "answer_question": "dia_assets.agents.query.run",
    "load_questions": "dia_assets.agents.query.run",
    "schema_index": "dia_assets.agents.query.run",
    "write_artifacts": "dia_assets.agents.query.run",
    "SchemaIndex": "dia_assets.agents.query.schema",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "AgentRun",
    "AgentSettings",
    "InMemoryMemory",
    "Item",
    "Lesson",
    "PreviousAnswer",
    "QueryAgent",
    "QueryMemory",
    "Ref",
    "SchemaIndex",
    "StoreMemory",
    "answer_question",
    "load_questions",
    "open_database",
    "schema_index",
    "transpile",
    "transpile_all",
    "write_artifacts",
]
