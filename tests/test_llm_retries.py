"""The model door (a litellm Router) retries rate limits and transient provider errors with
backoff, and nothing else; an unreachable model fails at once with one line naming the model
and why. Attempts are counted at litellm's own endpoint, the Router's backoff at its host."""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm  # noqa: E402
from litellm.litellm_core_utils.get_retry_from_policy import get_num_retries_from_retry_policy  # noqa: E402

from dia_assets.platform.model.errors import ModelUnavailable, is_network_error  # noqa: E402
from dia_assets.platform.model.litellm import (  # noqa: E402
    DoorSettings,
    ModelDoor,
    completion,
    litellm_chat,  # noqa: E402
    reset_door,
    retry_policy,
)
from tests.fake_llm import install_door  # noqa: E402
from tests.query_fixtures import FAKE_MODEL, call, register_tools  # noqa: E402


def _rate_limit() -> Exception:
    return litellm.RateLimitError(message="429 slow down", llm_provider="fake", model="fake/scripted")


@pytest.fixture
def door() -> Iterator[ModelDoor]:
    """A fresh door whose Router records its backoff sleeps (`door.host.sleeps`)."""
    yield install_door()
    reset_door(None)


@pytest.fixture
def attempts(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """Every attempt the Router makes, as the kwargs it sends to litellm's endpoint."""
    calls: list[dict] = []
    real = litellm.acompletion

    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs)
        return await real(*args, **kwargs)

    monkeypatch.setattr(litellm, "acompletion", counted)
    return calls


def test_the_router_retries_rate_limits_and_503s_only() -> None:
    """litellm's own reading of the door's RetryPolicy: what each error class is granted."""
    policy = retry_policy(DoorSettings(retries=2, rate_limit_retries=4))

    def granted(err: Exception) -> int | None:
        return get_num_retries_from_retry_policy(exception=err, retry_policy=policy)

    kw = {"llm_provider": "fake", "model": "m"}
    assert granted(_rate_limit()) == 4
    assert granted(litellm.ServiceUnavailableError(message="503", **kw)) == 2
    # litellm reports a refused connection as InternalServerError or APIConnectionError: none
    assert granted(litellm.InternalServerError(message="Connection error.", **kw)) == 0
    assert granted(litellm.APIConnectionError(message="refused", **kw)) == 0
    assert granted(litellm.Timeout(message="slow", **kw)) == 0
    assert granted(litellm.AuthenticationError(message="bad key", **kw)) == 0
    assert granted(litellm.BadRequestError(message="bad", **kw)) == 0


def test_a_429_does_not_fail_the_question(door: ModelDoor, attempts: list[dict]) -> None:
    """Two rate limits, then the scripted model answers: the chat call succeeds after the
    Router backed off twice, each wait longer than the one before."""
    def limited(messages: Any) -> Any:
        raise _rate_limit()

    register_tools([limited, limited, call("probe", sql="SELECT 1")])
    reply = litellm_chat(FAKE_MODEL)([{"role": "user", "content": "hi"}], [])
    assert reply.tool_calls[0].name == "probe"
    assert len(attempts) == 3 and len(door.host.sleeps) == 2
    assert 0 < door.host.sleeps[0] < door.host.sleeps[1]  # exponential backoff from the Router


def test_a_permanent_error_is_not_retried(door: ModelDoor, attempts: list[dict]) -> None:
    def bad_key(messages: Any) -> Any:
        raise litellm.AuthenticationError(message="bad key", llm_provider="fake", model="fake/scripted")

    register_tools([bad_key, "never reached"])
    with pytest.raises(litellm.AuthenticationError):
        completion(model=FAKE_MODEL, messages=[{"role": "user", "content": "hi"}])
    assert len(attempts) == 1 and door.host.sleeps == []


def refused_port() -> int:
    """A loopback port nothing listens on: connecting is refused at once."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_a_refused_connection_fails_at_once_naming_model_and_cause(door: ModelDoor, attempts: list[dict]) -> None:
    base = f"http://127.0.0.1:{refused_port()}/v1"
    with pytest.raises(ModelUnavailable) as info:
        completion(model="openai/gpt-4o-mini", api_base=base, api_key="not-used",
                   messages=[{"role": "user", "content": "hi"}])
    message = str(info.value)
    assert "\n" not in message and "'openai/gpt-4o-mini'" in message and base in message
    assert "unreachable" in message and "Connection refused" in message
    assert len(attempts) == 1 and door.host.sleeps == []  # no retry ladder for a refused connection
    assert attempts[0]["max_retries"] == 0  # nor one inside the SDK
    assert attempts[0]["timeout"].connect <= 5.0  # connecting has its own short bound
    assert is_network_error(info.value.__cause__)


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


def _serving(status: int) -> Iterator[_Server]:
    server = _Server(status)
    yield server
    server.httpd.shutdown()
    server.httpd.server_close()


@pytest.fixture
def overloaded() -> Iterator[_Server]:
    yield from _serving(503)


@pytest.fixture
def unauthorized() -> Iterator[_Server]:
    yield from _serving(401)


def test_a_503_is_retried_a_few_times_then_named(door: ModelDoor, overloaded: _Server) -> None:
    with pytest.raises(ModelUnavailable) as info:
        completion(model="openai/gpt-4o-mini", api_base=overloaded.url, api_key="not-used",
                   messages=[{"role": "user", "content": "hi"}])
    assert overloaded.hits[0] == 3  # the default: 2 retries
    assert len(door.host.sleeps) >= 2 and all(w > 0 for w in door.host.sleeps)  # backed off between them
    assert "'openai/gpt-4o-mini'" in str(info.value) and "kept failing" in str(info.value)


def test_a_401_from_a_real_endpoint_is_sent_once(door: ModelDoor, unauthorized: _Server) -> None:
    with pytest.raises(litellm.AuthenticationError):
        completion(model="openai/gpt-4o-mini", api_base=unauthorized.url, api_key="wrong",
                   messages=[{"role": "user", "content": "hi"}])
    assert unauthorized.hits[0] == 1 and door.host.sleeps == []


def test_retries_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIA_MODEL_RETRIES", "0")
    assert DoorSettings.from_env().retries == 0
    monkeypatch.setenv("DIA_MODEL_RETRIES", "many")
    with pytest.raises(ValueError, match="DIA_MODEL_RETRIES=many: expected an integer >= 0"):
        DoorSettings.from_env()

