"""A scripted model registered with litellm as provider `fake`: tests never touch a network."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm  # noqa: E402
from litellm import CustomLLM  # noqa: E402

Script = Callable[[list[dict[str, Any]]], str]


class ScriptedLLM(CustomLLM):
    """Answers each call with the next scripted reply, and records what it was sent."""

    def __init__(self, replies: list[str | Script]) -> None:
        super().__init__()
        self.replies = list(replies)
        self.calls: list[list[dict[str, Any]]] = []

    async def acompletion(self, *args: Any, **kwargs: Any) -> litellm.ModelResponse:
        """The model door calls the async path; the script itself is synchronous."""
        return self.completion(*args, **kwargs)

    def completion(self, *args: Any, **kwargs: Any) -> litellm.ModelResponse:
        messages = kwargs.get("messages") or []
        self.calls.append(messages)
        reply = self.replies.pop(0) if self.replies else "{}"
        text = reply(messages) if callable(reply) else reply
        return litellm.completion(model="gpt-4o-mini", messages=messages, mock_response=text)


def register(replies: list[str | Script]) -> ScriptedLLM:
    handler = ScriptedLLM(replies)
    litellm.custom_provider_map = [{"provider": "fake", "custom_handler": handler}]
    litellm.custom_provider_map and litellm.utils.custom_llm_setup()
    return handler


class RecordingHost:
    """litellm's router host with the backoff sleeps recorded and shortened to at most `cap_s`:
    tests see that the Router backed off, and how often, without waiting."""

    def __new__(cls, cap_s: float = 0.01) -> Any:
        from litellm.router_python_host import PythonHost

        class Host(PythonHost):
            __slots__ = ()
            sleeps: list[float] = []

            def sleep(self, seconds: float) -> Any:
                import asyncio

                Host.sleeps.append(seconds)
                return asyncio.sleep(min(seconds, cap_s))

            def sleep_sync(self, seconds: float) -> None:
                Host.sleeps.append(seconds)

        Host.sleeps = []
        return Host()


def install_door(env: dict[str, str] | None = None, host: Any = None) -> Any:
    """A fresh model door for this process (settings from the environment), recording its
    backoff sleeps in `host.sleeps`; returns the door. Undo with `reset_door(None)`."""
    from dia_assets.platform.model.litellm import DoorSettings, ModelDoor, reset_door

    door = ModelDoor(DoorSettings.from_env(env), host=host if host is not None else RecordingHost())
    reset_door(door)
    return door
