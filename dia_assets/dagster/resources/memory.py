"""Memory-store resource: the shared experience store (DESIGN §6) for assets and sensors."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from dia_assets.dagster.resources.embeddings import EmbeddingsResource
from dia_assets.platform.settings import get_settings

# The store (psycopg, pgvector, the embedded server) is imported when a step opens it: every
# run worker loads the code location, and most runs (a build) never touch the memory.
if TYPE_CHECKING:
    from dia_assets.platform.memory.store import MemoryStore


class MemoryResource(ConfigurableResource):
    """PostgreSQL + pgvector store: the embedded server in `<workspace>/pgdata` unless a URL
    is configured. The URL is read from DIA_MEMORY_URL at run time when not set here, so a
    password never shows in the Dagster UI's resource config."""

    embeddings: EmbeddingsResource
    url: str | None = Field(
        default=None,
        description="External PostgreSQL with the `vector` extension; default DIA_MEMORY_URL, "
        "else the embedded server.",
    )
    pgdata: str | None = Field(
        default=None, description="Embedded server data folder; default <DIA_WORKSPACE>/pgdata."
    )
    conflict_strategy: Literal["recency", "confidence", "confirmation"] = Field(
        default="recency", description="When two lessons conflict, which wins: the newer, the more confident or the more often confirmed."
    )
    ef_search: int = Field(default=80, description="HNSW candidate list size at query time.")
    judge_model: str | None = Field(
        default=None, description="litellm model of the conflict judge for `confirmation` (default DIA_MODEL)."
    )

    _store: Any = PrivateAttr(default=None)  # MemoryStore | None

    def store(self) -> MemoryStore:
        """The open store for this process (connected and migrated on first call)."""
        if self._store is None:
            from dia_assets.platform.memory.conflicts import ConflictPolicy
            from dia_assets.platform.memory.connection import default_pgdata
            from dia_assets.platform.memory.store import MemoryStore

            judge = None
            if self.conflict_strategy == "confirmation":  # the judge confirms each rule-found conflict
                from dia_assets.agents.memory.judge import litellm_conflict_judge

                judge = litellm_conflict_judge(self.judge_model or get_settings().model)
            self._store = MemoryStore.open(
                url=self.url or get_settings().memory_url,
                pgdata=Path(self.pgdata) if self.pgdata else default_pgdata(),
                embedder=self.embeddings.get_embedder(),
                policy=ConflictPolicy(strategy=self.conflict_strategy),
                judge=judge,
                ef_search=self.ef_search,
            )
        return self._store

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None
