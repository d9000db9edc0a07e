"""The model door retries rate limits and transient provider errors with backoff, and
nothing else; an unreachable model fails at once with one line naming the model and why."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm  # noqa: E402

from dia_assets.agents.query.llm import (  # noqa: E402
    ModelUnavailable,
    RetryPolicy,
    call_with_retries,
    completion,
    is_network_error,
    is_transient,
    litellm_chat,
)
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


def refused_port() -> int:
    """A loopback port nothing listens on: connecting is refused at once."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.fixture
def counted_completion(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Every litellm.completion the door makes, recorded (the door's attempts)."""
    calls: list[dict] = []
    real = litellm.completion

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        calls.append(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(litellm, "completion", counted)
    return calls


def test_a_refused_connection_fails_at_once_naming_model_and_cause(counted_completion: list[dict]) -> None:
    waits: list[float] = []
    base = f"http://127.0.0.1:{refused_port()}/v1"
    with pytest.raises(ModelUnavailable) as info:
        completion(retry=RetryPolicy(sleep=waits.append), model="openai/gpt-4o-mini", api_base=base,
                   api_key="not-used", messages=[{"role": "user", "content": "hi"}])
    message = str(info.value)
    assert "\n" not in message and "'openai/gpt-4o-mini'" in message and base in message
    assert "unreachable" in message and "Connection refused" in message
    assert len(counted_completion) == 1 and waits == []  # no retry ladder for a refused connection
    assert counted_completion[0]["max_retries"] == 0  # nor one inside the SDK
    assert counted_completion[0]["timeout"].connect <= 5.0  # connecting has its own short bound
    assert is_network_error(info.value.__cause__) and not is_transient(info.value.__cause__)


class _Server:
    """A loopback HTTP server that answers every request with `status`, counting requests."""

    def __init__(self, status: int) -> None:
        hits = self.hits = [0]

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                hits[0] += 1
                body = b'{"error": {"message": "overloaded", "type": "server_error"}}'
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()


@pytest.fixture
def overloaded() -> Iterator[_Server]:
    server = _Server(503)
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


def test_a_5xx_is_retried_a_few_times_then_named(overloaded: _Server) -> None:
    waits: list[float] = []
    with pytest.raises(ModelUnavailable) as info:
        completion(retry=RetryPolicy(jitter=0.0, sleep=waits.append), model="openai/gpt-4o-mini",
                   api_base=overloaded.url, api_key="not-used", messages=[{"role": "user", "content": "hi"}])
    assert overloaded.hits[0] == 3 and waits == [1.0, 2.0]  # the default cap: 3 attempts, short waits
    assert "'openai/gpt-4o-mini'" in str(info.value) and "kept failing" in str(info.value)
