"""The model door's Router: fallbacks when the primary fails, and one in-flight limit shared by
every caller in the process. Scripted providers only; no network."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm  # noqa: E402
from litellm import CustomLLM  # noqa: E402

from dia_assets.platform.model.litellm import DoorSettings, SettingError, completion, reset_door  # noqa: E402
from tests.fake_llm import RecordingHost, install_door  # noqa: E402

HI = [{"role": "user", "content": "hi"}]


class Provider(CustomLLM):
    """`door/<name>`: `door/down` always fails as a refused connection would; any other model
    answers its own name after `delay_s`, counting the calls in flight at once."""

    def __init__(self, delay_s: float = 0.0) -> None:
        super().__init__()
        self.delay_s = delay_s
        self.seen: list[str] = []
        self.in_flight = self.peak = 0
        self._lock = threading.Lock()

    async def acompletion(self, *args: Any, **kwargs: Any) -> Any:
        model = str(kwargs.get("model", ""))
        self.seen.append(model)
        if model.endswith("down"):
            raise ConnectionRefusedError(111, "Connection refused")
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            with self._lock:
                self.in_flight -= 1
        return litellm.completion(model="gpt-4o-mini", messages=kwargs["messages"], mock_response=f"from {model}")


def _register(provider: Provider) -> Provider:
    litellm.custom_provider_map = [{"provider": "door", "custom_handler": provider}]
    litellm.utils.custom_llm_setup()
    return provider


@pytest.fixture
def reset() -> Iterator[None]:
    yield
    reset_door(None)


def test_the_fallback_answers_when_the_primary_fails(reset: None) -> None:
    provider = _register(Provider())
    install_door({"DIA_MODEL": "door/down", "DIA_MODEL_FALLBACKS": "door/backup"})
    response = completion(model="door/down", messages=HI)
    assert response.choices[0].message.content == "from backup"
    assert provider.seen == ["down", "backup"]  # the primary once (no retry for a refusal), then the fallback


def test_without_fallbacks_the_primary_failure_is_one_line(reset: None) -> None:
    provider = _register(Provider())
    install_door({"DIA_MODEL": "door/down"})
    with pytest.raises(Exception) as info:
        completion(model="door/down", messages=HI)
    assert "door/down" in str(info.value) and "\n" not in str(info.value) and provider.seen == ["down"]


def test_one_in_flight_limit_is_shared_by_concurrent_callers(reset: None) -> None:
    """Two threads ask at once with DIA_MODEL_MAX_PARALLEL=1: the model never sees two calls
    in flight, and both callers get their answer (the second waits out the Router's backoff)."""
    provider = _register(Provider(delay_s=0.2))
    # backoff waits shortened to 0.5 s at most: longer than the first call holds the slot
    door = install_door({"DIA_MODEL": "door/shared", "DIA_MODEL_MAX_PARALLEL": "1"}, RecordingHost(cap_s=0.5))
    answers: list[str] = []
    start = threading.Barrier(2)

    def ask() -> None:
        start.wait()
        answers.append(completion(model="door/shared", messages=HI).choices[0].message.content)

    threads = [threading.Thread(target=ask) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert answers == ["from shared", "from shared"]
    assert provider.peak == 1 and provider.seen.count("shared") == 2
    assert door.host.sleeps  # the second caller was held back by the Router, not by the model


def test_without_a_limit_both_callers_run_at_once(reset: None) -> None:
    provider = _register(Provider(delay_s=0.3))
    install_door({"DIA_MODEL": "door/shared"})
    threads = [threading.Thread(target=completion, kwargs={"model": "door/shared", "messages": HI}) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert provider.peak == 2  # so the limit above is what kept them apart


def test_settings_are_read_and_checked_by_name() -> None:
    env = {"DIA_MODEL": "openai/a", "DIA_SEMANTIC_LIGHT_MODEL": "openai/b", "DIA_MODEL_FALLBACKS": "x/1, x/2",
           "DIA_MODEL_MAX_PARALLEL": "4", "DIA_MODEL_TIMEOUT_S": "30"}
    s = DoorSettings.from_env(env)
    assert s.models == ("openai/a", "openai/b") and s.fallbacks == ("x/1", "x/2")
    assert s.max_parallel == 4 and s.timeout_s == 30.0
    with pytest.raises(SettingError, match="DIA_MODEL_MAX_PARALLEL=0: expected an integer >= 1"):
        DoorSettings.from_env({"DIA_MODEL_MAX_PARALLEL": "0"})
    with pytest.raises(SettingError, match="DIA_MODEL_TIMEOUT_S=soon: expected a number > 0"):
        DoorSettings.from_env({"DIA_MODEL_TIMEOUT_S": "soon"})
