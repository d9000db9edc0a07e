"""Semantic operators with a cost cascade (Data Agents §III-B): sem_filter, sem_extract,
sem_group and sem_join over warehouse columns, each deciding a row by embedding search,
threshold pruning, a light model, then a strong model, and recording which stage decided."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dia_assets.platform.lazy import lazy_exports

if TYPE_CHECKING:
    from dia_assets.agents.semantic_ops.judge import Judge, JudgeTask
    from dia_assets.agents.semantic_ops.judge import prompts as judge_prompts
    from dia_assets.agents.semantic_ops.models import (
        CascadeConfig,
        SemanticModelUnavailable,
        SemanticOpError,
    )
    from dia_assets.agents.semantic_ops.operators import SemanticOps, kmeans
    from dia_assets.agents.semantic_ops.tables import qcol
    from dia_assets.agents.semantic_ops.vectors import InProcessIndex, VectorIndex

# Each name is imported from its module on first use (PEP 562), so importing the package
# (a sibling agent, the Dagster code location) loads none of them until it is used.
_EXPORTS = {
    "Judge": "dia_assets.agents.semantic_ops.judge",
    "JudgeTask": "dia_assets.agents.semantic_ops.judge",
    "judge_prompts": "dia_assets.agents.semantic_ops.judge:prompts",
    "CascadeConfig": "dia_assets.agents.semantic_ops.models",
    "SemanticModelUnavailable": "dia_assets.agents.semantic_ops.models",
    "SemanticOpError": "dia_assets.agents.semantic_ops.models",
    "SemanticOps": "dia_assets.agents.semantic_ops.operators",
    "kmeans": "dia_assets.agents.semantic_ops.operators",
    "qcol": "dia_assets.agents.semantic_ops.tables",
    "InProcessIndex": "dia_assets.agents.semantic_ops.vectors",
    "VectorIndex": "dia_assets.agents.semantic_ops.vectors",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


__all__ = [
    "CascadeConfig",
    "InProcessIndex",
    "Judge",
    "JudgeTask",
    "SemanticModelUnavailable",
    "SemanticOpError",
    "SemanticOps",
    "VectorIndex",
    "judge_prompts",
    "kmeans",
    "qcol",
]
