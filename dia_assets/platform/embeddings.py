"""Text embeddings for every agent (memory, catalog, query linking, semantic operators):
WordLlama offline by default, any litellm model by name through the model door.

The store records `Embedder.name` and `Embedder.dim` and refuses vectors from another model,
so the name must identify the model precisely.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from dia_assets.platform.settings import get_settings

WORDLLAMA = "wordllama/l2_supercat_256"
_WORDLLAMA_ALIASES = {"", "wordllama", WORDLLAMA}


@runtime_checkable
class Embedder(Protocol):
    """Anything that turns texts into unit-length float32 vectors of a fixed dimension."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def _unit(rows: np.ndarray) -> np.ndarray:
    """Normalise rows so cosine distance is well defined; zero rows stay zero."""
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return rows / norms


def wordllama_files() -> tuple[Path, Path]:
    """Weights and tokenizer shipped inside the installed wordllama wheel (no hub access)."""
    import importlib.util

    spec = importlib.util.find_spec("wordllama")
    if spec is None or spec.origin is None:
        raise RuntimeError("the wordllama package is not installed")
    base = Path(spec.origin).parent
    weights = base / "weights" / "l2_supercat_256.safetensors"
    tokenizer = base / "tokenizers" / "l2_supercat_tokenizer_config.json"
    for path in (weights, tokenizer):
        if not path.exists():
            raise RuntimeError(f"wordllama file missing from the installed package: {path}")
    return weights, tokenizer


@lru_cache(maxsize=1)
def _load_wordllama() -> Any:
    """Load once per process; WordLlama.load() would try the network for its tokenizer."""
    from safetensors import safe_open
    from tokenizers import Tokenizer

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    # wordllama/__init__ calls logging.basicConfig(INFO); undo that side effect.
    from wordllama.inference import WordLlamaInference

    root.handlers[:] = handlers
    root.setLevel(level)

    weights_path, tokenizer_path = wordllama_files()
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    with safe_open(str(weights_path), framework="np") as handle:
        weights = handle.get_tensor("embedding.weight")
    return WordLlamaInference(weights, tokenizer)


class WordLlamaEmbedder:
    """WordLlama l2_supercat, 256-d, loaded from the installed package's own files."""

    name = WORDLLAMA
    dim = 256

    def __init__(self, batch_size: int = 512) -> None:
        self.batch_size = batch_size
        self._model = _load_wordllama()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        rows = self._model.embed(list(texts), norm=False, batch_size=self.batch_size)
        return _unit(rows)


class LiteLLMEmbedder:
    """Any litellm embedding model (`DIA_EMBEDDING_MODEL`), called through the model door, so
    its retries, timeouts and in-flight limit are those of every other model call; litellm is
    imported on first use. `call` replaces the door (a test's own function)."""

    def __init__(
        self,
        model: str,
        dim: int | None = None,
        batch_size: int = 256,
        call: Callable[..., Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self.name = f"litellm/{model}"
        self.model = model
        self.batch_size = batch_size
        self.kwargs = kwargs
        self._call = call
        self.dim = dim if dim is not None else int(self._embed_batch(["dimension probe"]).shape[1])

    def _embedding_fn(self) -> Callable[..., Any]:
        if self._call is None:
            from dia_assets.platform.model.litellm import embedding

            self._call = embedding
        return self._call

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        response = self._embedding_fn()(model=self.model, input=texts, **self.kwargs)
        data = response["data"] if isinstance(response, dict) else response.data
        rows = [d["embedding"] if isinstance(d, dict) else d.embedding for d in data]
        return np.asarray(rows, dtype=np.float32)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = [
            self._embed_batch(list(texts[i : i + self.batch_size]))
            for i in range(0, len(texts), self.batch_size)
        ]
        rows = np.vstack(out) if out else np.zeros((0, self.dim), dtype=np.float32)
        if rows.shape[1] != self.dim:
            raise ValueError(f"{self.name} returned {rows.shape[1]}-d vectors, expected {self.dim}")
        return _unit(rows)


def default_embedding_model() -> str:
    return get_settings().embedding_model


def make_embedder(model: str | None = None, dim: int | None = None, **kwargs: Any) -> Embedder:
    """`wordllama` (default) or a litellm model name such as `openai/text-embedding-3-small`."""
    model = default_embedding_model() if model is None else model
    if model.strip().lower() in _WORDLLAMA_ALIASES:
        return WordLlamaEmbedder()
    return LiteLLMEmbedder(model.removeprefix("litellm/"), dim=dim, **kwargs)
