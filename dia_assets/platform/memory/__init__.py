"""The shared memory store of the agents (DESIGN §6): PostgreSQL + pgvector, framework-free.

The store, its connection (embedded server or `DIA_MEMORY_URL`), migrations, retrieval and
probe verification; what to remember and how to keep it tidy (lessons, examples, maintenance,
the conflict judge) is the memory agent's, in `dia_assets.agents.memory`.

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

from typing import TYPE_CHECKING

from dia_assets.platform.lazy import lazy_exports

if TYPE_CHECKING:
    from dia_assets.platform.embeddings import (
        Embedder,
        LiteLLMEmbedder,
        WordLlamaEmbedder,
        make_embedder,
    )
    from dia_assets.platform.memory.conflicts import ConflictJudge, ConflictPolicy, JudgeVerdict
    from dia_assets.platform.memory.connection import MemoryStoreUnavailable
    from dia_assets.platform.memory.migrations import EmbeddingMismatch
    from dia_assets.platform.memory.models import (
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
    from dia_assets.platform.memory.retrieval import MemoryFilter, RetrievalWeights
    from dia_assets.platform.memory.store import MemoryStore
    from dia_assets.platform.memory.verify import (
        GatedProbeRunner,
        ProbeRunner,
        duckdb_probe_runner,
        probe_confirms,
    )
    from dia_assets.platform.warehouse.fingerprint import (
        database_fingerprint,
        fingerprint_from_columns,
    )

# Each name is imported from its module on first use (PEP 562), so importing one
# submodule (the Dagster code location, a run worker) does not import them all.
_EXPORTS = {
    "ConflictJudge": "dia_assets.platform.memory.conflicts",
    "ConflictPolicy": "dia_assets.platform.memory.conflicts",
    "JudgeVerdict": "dia_assets.platform.memory.conflicts",
    "MemoryStoreUnavailable": "dia_assets.platform.memory.connection",
    "Embedder": "dia_assets.platform.embeddings",
    "LiteLLMEmbedder": "dia_assets.platform.embeddings",
    "WordLlamaEmbedder": "dia_assets.platform.embeddings",
    "make_embedder": "dia_assets.platform.embeddings",
    "database_fingerprint": "dia_assets.platform.warehouse.fingerprint",
    "fingerprint_from_columns": "dia_assets.platform.warehouse.fingerprint",
    "EmbeddingMismatch": "dia_assets.platform.memory.migrations",
    "Evidence": "dia_assets.platform.memory.models",
    "ImportReport": "dia_assets.platform.memory.models",
    "InsertResult": "dia_assets.platform.memory.models",
    "Kind": "dia_assets.platform.memory.models",
    "MaintenanceReport": "dia_assets.platform.memory.models",
    "MemoryItem": "dia_assets.platform.memory.models",
    "MemoryRef": "dia_assets.platform.memory.models",
    "NewMemory": "dia_assets.platform.memory.models",
    "Status": "dia_assets.platform.memory.models",
    "Tier": "dia_assets.platform.memory.models",
    "VerificationResult": "dia_assets.platform.memory.models",
    "MemoryFilter": "dia_assets.platform.memory.retrieval",
    "RetrievalWeights": "dia_assets.platform.memory.retrieval",
    "MemoryStore": "dia_assets.platform.memory.store",
    "GatedProbeRunner": "dia_assets.platform.memory.verify",
    "ProbeRunner": "dia_assets.platform.memory.verify",
    "duckdb_probe_runner": "dia_assets.platform.memory.verify",
    "probe_confirms": "dia_assets.platform.memory.verify",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


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
