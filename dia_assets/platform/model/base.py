"""The model protocol the agents depend on: messages and tool schemas in, a `Reply` out. The
agents never see litellm; `litellm.litellm_chat` and `scripted.ScriptedModel` both implement it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass
class ToolCall:
    id: str
    name: str
    arguments: str

    def args(self) -> dict[str, Any]:
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError as err:
            raise ValueError(f"tool arguments are not valid JSON: {err}") from err
        if not isinstance(value, dict):
            raise ValueError("tool arguments must be a JSON object")
        return value


@dataclass
class Reply:
    """One model turn. `usage` is `usage.Usage.as_dict()` (empty when the model reports none:
    the loop then times the call itself)."""

    content: str | None
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)

    def as_message(self) -> dict[str, Any]:
        msg: dict[str, Any] = {"role": "assistant", "content": self.content}
        if self.tool_calls:
            msg["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
                for c in self.tool_calls
            ]
        return msg


class ChatFn(Protocol):
    """A tool-calling model: the conversation so far and the tool schemas, one reply."""

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply: ...
