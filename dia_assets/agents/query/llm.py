"""Tool-calling model access through the model door (`agents.models.door`). The loop depends
only on `ChatFn`; tests pass a scripted provider registered with litellm, so this exact code
path runs offline."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dia_assets.agents.models.errors import ModelUnavailable, is_network_error, unavailable

NO_MODEL_MESSAGE = (
    "No model is configured, so the Query Generator cannot answer questions. Set DIA_MODEL to "
    "a litellm model name and the provider's API key, for example "
    "`export DIA_MODEL=anthropic/claude-sonnet-4-5 ANTHROPIC_API_KEY=...` or "
    "`export DIA_MODEL=ollama/qwen2.5-coder` for a local model, then check it with `dia doctor`. "
    "The rest of the pipeline runs without one."
)


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
class ChatReply:
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


ChatFn = Callable[[list[dict[str, Any]], list[dict[str, Any]]], ChatReply]


def _litellm() -> Any:
    from dia_assets.agents.models.door import _litellm as door_litellm

    return door_litellm()


def completion(**kwargs: Any) -> Any:
    """A completion through the model door (`agents.models.door`): the Router's retries,
    fallbacks, shared limit and timeouts; `ModelUnavailable` when the model cannot be reached."""
    from dia_assets.agents.models.door import completion as door_completion

    return door_completion(**kwargs)


def litellm_chat(model: str, temperature: float = 0.0, timeout_s: float = 120.0, **extra: Any) -> ChatFn:
    """A ChatFn over the model door with tools; records tokens, cost and latency (the
    Router's retry waits included)."""

    def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ChatReply:
        litellm = _litellm()
        started = time.perf_counter()
        # drop_params: some models (reasoning models) reject temperature; litellm drops it for them
        kwargs: dict[str, Any] = {"temperature": temperature, "timeout": timeout_s, "drop_params": True, **extra}
        if tools:
            kwargs["tools"] = tools
            kwargs["tool_choice"] = "auto"
        response = completion(model=model, messages=messages, **kwargs)
        latency = time.perf_counter() - started
        message = response.choices[0].message
        calls = [
            ToolCall(tc.id or f"call_{i}", tc.function.name, tc.function.arguments or "{}")
            for i, tc in enumerate(getattr(message, "tool_calls", None) or [])
        ]
        usage = getattr(response, "usage", None)
        return ChatReply(
            content=message.content,
            tool_calls=calls,
            usage={
                "model": model,
                "prompt_tokens": getattr(usage, "prompt_tokens", 0) or 0,
                "completion_tokens": getattr(usage, "completion_tokens", 0) or 0,
                "cost_usd": _cost(litellm, response, model),
                "latency_s": round(latency, 4),
            },
        )

    return chat


def _cost(litellm: Any, response: Any, model: str) -> float:
    """litellm's cost tracking; custom providers are priced by their model name."""
    for kwargs in ({"model": model}, {}):
        try:
            return float(litellm.completion_cost(completion_response=response, **kwargs))
        except Exception:
            continue
    return 0.0


# the door's errors, re-exported: the query loop and its callers name them from here
__all__ = ["NO_MODEL_MESSAGE", "ChatFn", "ChatReply", "ModelUnavailable", "ToolCall", "completion",
           "is_network_error", "litellm_chat", "unavailable"]
