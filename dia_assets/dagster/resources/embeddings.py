"""Embeddings resource: WordLlama offline by default, any litellm model via DIA_EMBEDDING_MODEL."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from dagster import ConfigurableResource
from pydantic import Field

if TYPE_CHECKING:  # numpy and the embedder are imported when a step embeds, not at load
    import numpy as np

    from dia_assets.platform.embeddings import Embedder


def _default_model() -> str:
    from dia_assets.platform.embeddings import default_embedding_model

    return default_embedding_model()


@lru_cache(maxsize=4)
def _embedder(model: str, dim: int | None) -> Embedder:
    """One loaded model per process, shared by every resource instance that names it."""
    from dia_assets.platform.embeddings import make_embedder

    return make_embedder(model, dim=dim)


class EmbeddingsResource(ConfigurableResource):
    """Text embeddings for memory. The model name is recorded by the store, which refuses
    vectors from any other model."""

    model: str = Field(
        default_factory=_default_model,
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
