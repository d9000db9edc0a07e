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
