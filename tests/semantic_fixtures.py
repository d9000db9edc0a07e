"""Scripted light and strong models for the semantic operators, registered with litellm as
provider `fake` (`fake/light`, `fake/strong`): each reads the items from the prompt's
<data> block and answers by a rule the test gives, so every stage runs offline."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from dia_assets.platform.model.litellm import register_scripted
from dia_assets.platform.model.scripted import ScriptedModel, Turn

# rule(model, task_text, item) -> (answer, confidence) or None to leave the item out
Rule = Callable[[str, str, dict[str, Any]], tuple[Any, float] | None]


def data_items(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    text = messages[-1]["content"]
    match = re.search(r"<data>\n(.*)\n</data>", text, re.DOTALL)
    assert match, "the prompt has no <data> block"
    return text[: match.start()], json.loads(match.group(1))


class RoutedLLM:
    """One scripted model for every `fake/<name>` model; records (model, item count) per call."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.calls: list[tuple[str, int]] = []
        self.prompts: list[str] = []
        self.model = ScriptedModel(respond=self.answer, record=False)

    def answer(self, messages: list[dict[str, Any]], turn: Turn) -> str:
        model = turn.model.split("/")[-1]
        task, items = data_items(messages)
        self.calls.append((model, len(items)))
        self.prompts.append(messages[-1]["content"])
        answers = []
        for item in items:
            got = self.rule(model, task, item)
            if got is not None:
                answers.append({"id": item["id"], "answer": got[0], "confidence": got[1]})
        return json.dumps({"answers": answers})

    def count(self, model: str) -> int:
        return sum(1 for m, _ in self.calls if m == model)

    def items(self, model: str) -> int:
        return sum(n for m, n in self.calls if m == model)


def register_rule(rule: Rule) -> RoutedLLM:
    handler = RoutedLLM(rule)
    register_scripted(handler.model)
    return handler


def register_agent_and_stages(agent: ScriptedModel, stages: RoutedLLM) -> None:
    """provider `fake`: `fake/scripted` is the agent (tool calls), other `fake/*` models the
    semantic stages."""

    def route(messages: list[dict[str, Any]], turn: Turn) -> Any:
        if turn.model.split("/")[-1] == "scripted":
            return agent.step(messages, turn.tools, turn.model)
        return stages.answer(messages, turn)

    register_scripted(ScriptedModel(respond=route, record=False))
