"""Embeddings resource: WordLlama offline by default, any litellm model via DIA_EMBEDDING_MODEL."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np
from dagster import ConfigurableResource
from pydantic import Field

from dia_assets.agents.memory.embedder import Embedder, default_embedding_model, make_embedder


@lru_cache(maxsize=4)
def _embedder(model: str, dim: int | None) -> Embedder:
    """One loaded model per process, shared by every resource instance that names it."""
    return make_embedder(model, dim=dim)


class EmbeddingsResource(ConfigurableResource):
    """Text embeddings for memory. The model name is recorded by the store, which refuses
    vectors from any other model."""

    model: str = Field(
        default_factory=default_embedding_model,
        description="`wordllama` (256-d, shipped in the wheel) or a litellm embedding model "
        "name such as `openai/text-embedding-3-small` (DIA_EMBEDDING_MODEL).",
    )
    dim: int | None = Field(
        default=None, description="Vector size of a litellm model; probed with one call if unset."
    )

    def get_embedder(self) -> Embedder:
        return _embedder(self.model, self.dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-length float32 rows, one per text."""
        return self.get_embedder().embed(texts)
