"""A scripted model registered with litellm as provider `fake`: tests never touch a network."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dia_assets.platform.model.litellm import register_scripted
from dia_assets.platform.model.scripted import ScriptedModel

Script = Callable[[list[dict[str, Any]]], str]


def register(replies: list[str | Script]) -> ScriptedModel:
    """Each call answers with the next reply ("{}" once they run out); `.calls` records what
    each call was sent."""
    return register_scripted(ScriptedModel(replies, default="{}"))


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
