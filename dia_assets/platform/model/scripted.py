"""`ScriptedModel`: a model that plays a script, turn by turn (like pydantic-ai's FunctionModel).
The tests, the benches, the security harness and the eval oracle (`--model oracle`) all use
it. Called directly it is a `ChatFn` (no litellm, no usage reported); registered with litellm
(`litellm.register_scripted`) it answers a provider's model names through the model door, so
the production path (Router, tool-call parsing, usage and cost) runs offline.

A step is plain text, one tool call `call("probe", sql=...)`, several `calls(call(...), ...)`,
or a callable `(messages) -> step` that looks at the conversation so far. `respond(messages,
turn)` instead of a list scripts every turn from the conversation (the oracle, rule models)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from dia_assets.platform.model.base import Reply, ToolCall

FAKE_MODEL = "fake/scripted"  # tests' model name; priced per token when registered with a price
PRICE_IN, PRICE_OUT = 1e-6, 4e-6  # USD per token for FAKE_MODEL

Step = Any  # str | dict (one call) | list[dict] (calls) | Callable[[messages], Step]


def call(tool: str, /, **arguments: Any) -> dict[str, Any]:
    """One tool call step."""
    return {"name": tool, "arguments": arguments}


def calls(*items: dict[str, Any]) -> list[dict[str, Any]]:
    """Several tool calls in one reply."""
    return list(items)


def say(text: str) -> str:
    return text


@dataclass(frozen=True)
class Turn:
    """What a `respond` function sees besides the messages."""

    model: str
    tools: list[dict[str, Any]]
    index: int

    @property
    def tool_names(self) -> list[str]:
        return [t.get("function", {}).get("name", "") for t in self.tools if isinstance(t, dict)]


@dataclass
class ScriptedModel:
    """Replies with the next step (or `respond`'s), `default` once the script is out; records
    each request as {"model", "messages", "tools"} unless `record` is off. Thread-safe: the
    eval runner calls the oracle from several threads."""

    steps: list[Step] = field(default_factory=list)
    respond: Callable[[list[dict[str, Any]], Turn], Step] | None = None
    default: Step = "no lesson"
    name: str = FAKE_MODEL  # the model name a registered reply carries (what litellm prices)
    call_prefix: str = "call_"
    record: bool = True
    requests: list[dict[str, Any]] = field(default_factory=list)
    _ids: int = field(default=0, init=False, repr=False)
    _turns: int = field(default=0, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.steps = list(self.steps)  # the caller's list stays as it was (scripts are reused)

    @property
    def calls(self) -> list[list[dict[str, Any]]]:
        """The messages of each request, in order."""
        return [r["messages"] for r in self.requests]

    def sent(self) -> str:
        """Everything the model was sent, as one JSON text (to look for leaks)."""
        return json.dumps(self.calls, ensure_ascii=False, default=str)

    def step(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
             model: str = "") -> Step:
        """The next step, resolved to text, a call or a list of calls."""
        with self._lock:
            if self.record:
                self.requests.append({"model": model, "messages": [dict(m) for m in messages], "tools": tools})
            turn = Turn(model, list(tools or []), self._turns)
            self._turns += 1
            if self.respond is None:
                step = self.steps.pop(0) if self.steps else self.default
        if self.respond is not None:
            step = self.respond(messages, turn)
        while callable(step):
            step = step(messages)
        return step

    def tool_calls(self, step: Step) -> list[ToolCall]:
        items = step if isinstance(step, list) else [step]
        out = []
        with self._lock:
            for item in items:
                self._ids += 1
                out.append(ToolCall(f"{self.call_prefix}{self._ids}", item["name"], json.dumps(item["arguments"])))
        return out

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
              model: str = "") -> tuple[Reply, dict[str, int]]:
        """The reply and its token counts (a character estimate: 4 characters a token)."""
        step = self.step(messages, tools, model)
        prompt = sum(len(str(m.get("content") or "")) for m in messages) // 4 + 1
        if isinstance(step, str):
            return Reply(content=step), {"prompt_tokens": prompt, "completion_tokens": len(step) // 4 + 1}
        found = self.tool_calls(step)
        return Reply(content=None, tool_calls=found), {"prompt_tokens": prompt,
                                                       "completion_tokens": self.completion_tokens(found)}

    def completion_tokens(self, found: list[ToolCall]) -> int:
        """Tokens of a tool-call reply: each call as {"name", "arguments"} JSON."""
        return sum(len(json.dumps({"name": c.name, "arguments": json.loads(c.arguments)})) for c in found) // 4 + 1

    def __call__(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        """The `ChatFn`: the reply without usage (no provider priced it)."""
        return self.reply(messages, tools)[0]
