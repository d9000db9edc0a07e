"""Query Generator (DIA §3.5, App. D, E): an execution-grounded, self-verifying SQL agent.

Framework-free: no Dagster imports. Typical use:

    from dia_assets.agents.query import answer_question
    result, run = answer_question("How many staff per role?", "dia_workspace/warehouse.duckdb",
                                  model="openai/gpt-5", workspace="dia_workspace")

Modules: contract (shape declaration), tools, safety, verify, policies, loop,
modification, dialects, schema (schema linking), memory (protocol + adapters), run. The model
comes through `dia_assets.platform.model` (a `ChatFn`).
"""

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
