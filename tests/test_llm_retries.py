"""The model door retries rate limits and transient provider errors with backoff, and
nothing else."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm  # noqa: E402

from dia_assets.agents.query.llm import RetryPolicy, call_with_retries, is_transient, litellm_chat  # noqa: E402
from tests.query_fixtures import FAKE_MODEL, call, register_tools  # noqa: E402


def _rate_limit() -> Exception:
    return litellm.RateLimitError(message="429 slow down", llm_provider="fake", model="fake/scripted")


def test_transient_errors_are_told_apart_from_permanent_ones() -> None:
    assert is_transient(_rate_limit())
    assert is_transient(litellm.APIConnectionError(message="reset", llm_provider="fake", model="m"))
    assert is_transient(litellm.ServiceUnavailableError(message="503", llm_provider="fake", model="m"))
    assert not is_transient(litellm.AuthenticationError(message="bad key", llm_provider="fake", model="m"))
    assert not is_transient(litellm.BadRequestError(message="bad", llm_provider="fake", model="m"))
    assert not is_transient(ValueError("a bug"))


def test_backoff_grows_and_the_last_error_is_raised() -> None:
    waits: list[float] = []
    policy = RetryPolicy(attempts=4, base_s=1.0, max_s=3.0, jitter=0.0, sleep=waits.append)

    def always() -> None:
        raise _rate_limit()

    with pytest.raises(litellm.RateLimitError):
        call_with_retries(always, retry=policy)
    assert waits == [1.0, 2.0, 3.0]  # doubled, capped; no wait after the last attempt


def test_a_permanent_error_is_not_retried() -> None:
    waits: list[float] = []
    n = {"calls": 0}

    def auth() -> None:
        n["calls"] += 1
        raise litellm.AuthenticationError(message="bad key", llm_provider="fake", model="m")

    with pytest.raises(litellm.AuthenticationError):
        call_with_retries(auth, retry=RetryPolicy(sleep=waits.append))
    assert n["calls"] == 1 and waits == []


def test_a_429_does_not_fail_the_question(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two rate limits, then the scripted model answers: the chat call succeeds."""
    register_tools([call("probe", sql="SELECT 1")])
    real = litellm.completion
    failures = {"left": 2}

    def flaky(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        if failures["left"]:
            failures["left"] -= 1
            raise _rate_limit()
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm, "completion", flaky)
    waits: list[float] = []
    chat = litellm_chat(FAKE_MODEL, retry=RetryPolicy(base_s=0.5, jitter=0.0, sleep=waits.append))
    reply = chat([{"role": "user", "content": "hi"}], [])
    assert reply.tool_calls[0].name == "probe" and waits == [0.5, 1.0]
