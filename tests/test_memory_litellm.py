"""litellm paths of memory, offline: embeddings from a registered fake provider, and the
LLM conflict judge answered by `mock_response`. Kept apart because importing litellm is slow."""

from __future__ import annotations

import hashlib
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm  # noqa: E402
from litellm import CustomLLM  # noqa: E402

from dia_assets.agents.memory.judge import litellm_conflict_judge, parse_verdict  # noqa: E402
from dia_assets.dagster.resources.embeddings import EmbeddingsResource  # noqa: E402
from dia_assets.platform.memory import (
    ConflictPolicy,
    EmbeddingMismatch,
    JudgeVerdict,
    Kind,
    LiteLLMEmbedder,
    MemoryStore,
    NewMemory,
    Status,
    make_embedder,
)
from tests import memory_fixtures  # noqa: E402

# pytest fixtures, shared through the module namespace
db_url = memory_fixtures.db_url
pg_server = memory_fixtures.pg_server


class FakeEmbeddings(CustomLLM):
    """8-d vectors from word hashes; counts its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def embedding(
        self, model: str, input: list, model_response: Any, *args: Any, **kwargs: Any
    ) -> Any:
        self.calls += 1
        data = []
        for i, text in enumerate(input):
            vec = [0.0] * 8
            for word in str(text).lower().split():
                vec[int(hashlib.md5(word.encode()).hexdigest(), 16) % 8] += 1.0
            data.append({"object": "embedding", "index": i, "embedding": vec})
        model_response.data = data
        model_response.model = model
        return model_response

    async def aembedding(self, *args: Any, **kwargs: Any) -> Any:
        """The model door calls litellm's async path."""
        return self.embedding(*args, **kwargs)


@pytest.fixture
def fake_embeddings() -> FakeEmbeddings:
    handler = FakeEmbeddings()
    others = [p for p in (litellm.custom_provider_map or []) if p.get("provider") != "fakeembed"]
    litellm.custom_provider_map = [*others, {"provider": "fakeembed", "custom_handler": handler}]
    litellm.utils.custom_llm_setup()
    return handler


def _lesson(body: str) -> NewMemory:
    return NewMemory(
        kind=Kind.JOIN,
        title="Join path for county",
        body=body,
        probe_sql="SELECT true",
        scope="db-a",
    )


def test_litellm_embedder_probes_its_dimension_and_the_store_records_the_model(
    fake_embeddings: FakeEmbeddings, db_url: str
) -> None:
    embedder = make_embedder("fakeembed/model-one")
    assert (
        isinstance(embedder, LiteLLMEmbedder)
        and embedder.dim == 8
        and embedder.name == "litellm/fakeembed/model-one"
    )
    store = MemoryStore.open(url=db_url, embedder=embedder)
    item = store.insert(_lesson("Reach county through schools.cds_code")).id
    assert store.retrieve("county schools", k=1)[0].id == item
    store.close()
    with pytest.raises(EmbeddingMismatch, match="fakeembed/model-one"):
        MemoryStore.open(url=db_url, embedder=LiteLLMEmbedder("fakeembed/model-two", dim=8))
    resource = EmbeddingsResource(model="fakeembed/model-one", dim=8)
    assert resource.embed(["a b c"]).shape == (1, 8)


def test_llm_judge_confirms_conflicts_through_litellm(db_url: str) -> None:
    judge = litellm_conflict_judge(
        "openai/judge-test", mock_response='{"conflict": true, "prefer": "old", "reason": "x"}'
    )
    store = MemoryStore.open(
        url=db_url, judge=judge, policy=ConflictPolicy(strategy="confirmation")
    )
    first = store.insert(_lesson("Reach county through schools.cds_code")).id
    second = store.insert(_lesson("Reach county through scores.cds_code instead"))
    assert [(c.other_id, c.resolution, c.rule) for c in second.conflicts] == [
        (first, "old_wins", "confirmation")
    ]
    assert second.status == Status.SUPERSEDED and store.get(first).status == Status.ACTIVE
    dismiss = litellm_conflict_judge("openai/judge-test", mock_response='{"conflict": false}')
    third = store.insert(_lesson("Reach county through a third path"), judge=dismiss)
    assert third.conflicts == []
    store.close()


def test_parse_verdict_is_safe_on_odd_answers() -> None:
    assert parse_verdict('Sure! {"conflict": true, "prefer": "new"}') == JudgeVerdict.NEW_WINS
    assert parse_verdict('{"conflict": false}') == JudgeVerdict.NO_CONFLICT
    assert parse_verdict("no idea") == JudgeVerdict.KEEP_BOTH
    assert parse_verdict('{"conflict": true, "prefer": "whatever"}') == JudgeVerdict.KEEP_BOTH
