"""Shared memory of the three agents (DESIGN §6): PostgreSQL + pgvector, framework-free.

Typical use by an agent:

    store = MemoryStore.open()                                   # embedded, or DIA_MEMORY_URL
    scope = database_fingerprint("dia_workspace/warehouse.duckdb")
    with duckdb_probe_runner("dia_workspace/warehouse.duckdb") as probe:
        usable = store.retrieve_verified(question, probe, scope=scope)   # refs, verified here
    body = store.get(usable[0][0].id)                            # pull a body on demand
    store.insert(NewMemory(kind=Kind.AGGREGATION, title=..., body=..., probe_sql=...,
                           evidence=[...], scope=scope, question=question))
    store.record_outcome(item_id, success=True, scope=scope)
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dia_assets.agents.memory.conflicts import ConflictJudge, ConflictPolicy, JudgeVerdict
    from dia_assets.agents.memory.connection import MemoryStoreUnavailable
    from dia_assets.agents.memory.migrations import EmbeddingMismatch
    from dia_assets.agents.memory.models import (
        Evidence,
        ImportReport,
        InsertResult,
        Kind,
        MaintenanceReport,
        MemoryItem,
        MemoryRef,
        NewMemory,
        Status,
        Tier,
        VerificationResult,
    )
    from dia_assets.agents.memory.policy import MaintenancePolicy
    from dia_assets.agents.memory.retrieval import MemoryFilter, RetrievalWeights
    from dia_assets.agents.memory.store import MemoryStore
    from dia_assets.agents.memory.verify import (
        GatedProbeRunner,
        ProbeRunner,
        duckdb_probe_runner,
        probe_confirms,
    )
    from dia_assets.platform.embeddings import (
        Embedder,
        LiteLLMEmbedder,
        WordLlamaEmbedder,
        make_embedder,
    )
    from dia_assets.platform.warehouse.fingerprint import (
        database_fingerprint,
        fingerprint_from_columns,
    )

# Each name is imported from its module on first use (PEP 562), so importing one
# submodule (the Dagster code location, a run worker) does not import them all.
_EXPORTS = {
    "ConflictJudge": "dia_assets.agents.memory.conflicts",
    "ConflictPolicy": "dia_assets.agents.memory.conflicts",
    "JudgeVerdict": "dia_assets.agents.memory.conflicts",
    "MemoryStoreUnavailable": "dia_assets.agents.memory.connection",
    "Embedder": "dia_assets.platform.embeddings",
    "LiteLLMEmbedder": "dia_assets.platform.embeddings",
    "WordLlamaEmbedder": "dia_assets.platform.embeddings",
    "make_embedder": "dia_assets.platform.embeddings",
    "database_fingerprint": "dia_assets.platform.warehouse.fingerprint",
    "fingerprint_from_columns": "dia_assets.platform.warehouse.fingerprint",
    "EmbeddingMismatch": "dia_assets.agents.memory.migrations",
    "Evidence": "dia_assets.agents.memory.models",
    "ImportReport": "dia_assets.agents.memory.models",
    "InsertResult": "dia_assets.agents.memory.models",
    "Kind": "dia_assets.agents.memory.models",
    "MaintenanceReport": "dia_assets.agents.memory.models",
    "MemoryItem": "dia_assets.agents.memory.models",
    "MemoryRef": "dia_assets.agents.memory.models",
    "NewMemory": "dia_assets.agents.memory.models",
    "Status": "dia_assets.agents.memory.models",
    "Tier": "dia_assets.agents.memory.models",
    "VerificationResult": "dia_assets.agents.memory.models",
    "MaintenancePolicy": "dia_assets.agents.memory.policy",
    "MemoryFilter": "dia_assets.agents.memory.retrieval",
    "RetrievalWeights": "dia_assets.agents.memory.retrieval",
    "MemoryStore": "dia_assets.agents.memory.store",
    "GatedProbeRunner": "dia_assets.agents.memory.verify",
    "ProbeRunner": "dia_assets.agents.memory.verify",
    "duckdb_probe_runner": "dia_assets.agents.memory.verify",
    "probe_confirms": "dia_assets.agents.memory.verify",
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
    "ConflictJudge",
    "ConflictPolicy",
    "GatedProbeRunner",
    "Embedder",
    "EmbeddingMismatch",
    "Evidence",
    "ImportReport",
    "InsertResult",
    "JudgeVerdict",
    "Kind",
    "LiteLLMEmbedder",
    "MaintenancePolicy",
    "MaintenanceReport",
    "MemoryFilter",
    "MemoryItem",
    "MemoryRef",
    "MemoryStore",
    "MemoryStoreUnavailable",
    "NewMemory",
    "ProbeRunner",
    "RetrievalWeights",
    "Status",
    "Tier",
    "VerificationResult",
    "WordLlamaEmbedder",
    "database_fingerprint",
    "fingerprint_from_columns",
    "duckdb_probe_runner",
    "make_embedder",
    "probe_confirms",
]
