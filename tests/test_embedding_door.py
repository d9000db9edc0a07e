"""A litellm embedding model is reached through the model door: the Router's retries with
backoff, its in-flight limit and its one-line errors apply to embeddings as to chat calls.
The provider below answers only litellm's async path (the door's), so a bypass fails too."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm  # noqa: E402
from litellm import CustomLLM  # noqa: E402

from dia_assets.platform.embeddings import LiteLLMEmbedder, WordLlamaEmbedder, make_embedder  # noqa: E402
from dia_assets.platform.model import litellm as door_module  # noqa: E402
from dia_assets.platform.model.errors import ModelUnavailable  # noqa: E402
from dia_assets.platform.model.litellm import reset_door  # noqa: E402
from tests.fake_llm import RecordingHost, install_door  # noqa: E402


class Embeddings(CustomLLM):
    """`emb/<name>`: 4-d word-hash vectors. `emb/flaky` answers 503 to its first call,
    `emb/down` refuses every connection; calls in flight at once are counted."""

    def __init__(self, delay_s: float = 0.0) -> None:
        super().__init__()
        self.delay_s = delay_s
        self.seen: list[str] = []
        self.in_flight = self.peak = 0
        self._lock = threading.Lock()

    async def aembedding(self, model: str, input: list, model_response: Any, *args: Any, **kwargs: Any) -> Any:
        self.seen.append(model)
        if model == "down":
            raise ConnectionRefusedError(111, "Connection refused")
        if model == "flaky" and self.seen.count("flaky") == 1:
            raise litellm.ServiceUnavailableError(message="overloaded", llm_provider="emb", model=model)
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            with self._lock:
                self.in_flight -= 1
        data = []
        for i, text in enumerate(input):
            vec = [0.0] * 4
            for word in str(text).lower().split():
                vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % 4] += 1.0
            data.append({"object": "embedding", "index": i, "embedding": vec})
        model_response.data = data
        model_response.model = model
        return model_response


def _register(provider: Embeddings) -> Embeddings:
    litellm.custom_provider_map = [{"provider": "emb", "custom_handler": provider}]
    litellm.utils.custom_llm_setup()
    return provider


@pytest.fixture
def reset() -> Iterator[None]:
    yield
    reset_door(None)


def test_a_transient_embedding_failure_is_retried_by_the_router(reset: None) -> None:
    provider = _register(Embeddings())
    door = install_door()
    embedder = make_embedder("emb/flaky")  # the dimension probe meets the 503; the Router retries
    assert isinstance(embedder, LiteLLMEmbedder)
    rows = embedder.embed(["county schools", "schools county", "zip code"])
    assert embedder.dim == 4 and rows.shape == (3, 4)
    assert np.allclose(np.linalg.norm(rows, axis=1), 1.0) and np.allclose(rows[0], rows[1])
    assert provider.seen[:2] == ["flaky", "flaky"] and len(door.host.sleeps) == 1  # one backoff, then the answer


def test_embedding_calls_share_the_in_flight_limit(reset: None) -> None:
    provider = _register(Embeddings(delay_s=0.2))
    install_door({"DIA_MODEL_MAX_PARALLEL": "1"}, RecordingHost(cap_s=0.5))
    embedder = LiteLLMEmbedder("emb/shared", dim=4)
    start = threading.Barrier(2)
    shapes: list[tuple[int, int]] = []

    def embed() -> None:
        start.wait()
        shapes.append(embedder.embed(["a b"]).shape)

    threads = [threading.Thread(target=embed) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert shapes == [(1, 4), (1, 4)] and provider.peak == 1 and provider.seen.count("shared") == 2


def test_an_unreachable_embedding_model_fails_in_one_line_without_the_chat_fallbacks(reset: None) -> None:
    provider = _register(Embeddings())
    install_door({"DIA_MODEL": "emb/chat", "DIA_MODEL_FALLBACKS": "emb/backup"})
    with pytest.raises(ModelUnavailable) as info:
        LiteLLMEmbedder("emb/down", dim=4).embed(["a"])
    assert "emb/down" in str(info.value) and "\n" not in str(info.value)
    assert provider.seen == ["down"]  # no retry for a refusal, and no chat model as a fallback


def test_the_offline_default_needs_no_door(reset: None, monkeypatch: pytest.MonkeyPatch) -> None:
    reset_door(None)
    monkeypatch.delenv("DIA_EMBEDDING_MODEL", raising=False)
    assert isinstance(make_embedder(), WordLlamaEmbedder)
    assert door_module._DOOR is None
