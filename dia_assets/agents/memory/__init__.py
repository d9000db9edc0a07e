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

from dia_assets.agents.memory.conflicts import ConflictJudge, ConflictPolicy, JudgeVerdict
from dia_assets.agents.memory.connection import MemoryStoreUnavailable
from dia_assets.agents.memory.embedder import (
    Embedder,
    LiteLLMEmbedder,
    WordLlamaEmbedder,
    make_embedder,
)
from dia_assets.agents.memory.fingerprint import database_fingerprint, fingerprint_from_columns
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
    DuckDBProbeRunner,
    PostgresProbeRunner,
    ProbeRunner,
    duckdb_probe_runner,
    probe_confirms,
)

__all__ = [
    "ConflictJudge",
    "ConflictPolicy",
    "DuckDBProbeRunner",
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
    "PostgresProbeRunner",
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
