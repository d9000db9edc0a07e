"""Scripted light and strong models for the semantic operators, registered with litellm as
provider `fake` (`fake/light`, `fake/strong`): each reads the items from the prompt's
<data> block and answers by a rule the test gives, so every stage runs offline."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm  # noqa: E402
from litellm import CustomLLM  # noqa: E402

# rule(model, task_text, item) -> (answer, confidence) or None to leave the item out
Rule = Callable[[str, str, dict[str, Any]], tuple[Any, float] | None]


def data_items(messages: list[dict[str, Any]]) -> tuple[str, list[dict[str, Any]]]:
    text = messages[-1]["content"]
    match = re.search(r"<data>\n(.*)\n</data>", text, re.DOTALL)
    assert match, "the prompt has no <data> block"
    return text[: match.start()], json.loads(match.group(1))


class RoutedLLM(CustomLLM):
    """One handler for every `fake/<name>` model; records (model, item count) per call."""

    def __init__(self, rule: Rule) -> None:
        super().__init__()
        self.rule = rule
        self.calls: list[tuple[str, int]] = []
        self.prompts: list[str] = []

    async def acompletion(self, *args: Any, **kwargs: Any) -> litellm.ModelResponse:
        """The model door calls the async path; the script itself is synchronous."""
        return self.completion(*args, **kwargs)

    def completion(self, *args: Any, **kwargs: Any) -> litellm.ModelResponse:
        model = str(kwargs.get("model", "")).split("/")[-1]
        messages = kwargs.get("messages") or []
        task, items = data_items(messages)
        self.calls.append((model, len(items)))
        self.prompts.append(messages[-1]["content"])
        answers = []
        for item in items:
            got = self.rule(model, task, item)
            if got is not None:
                answers.append({"id": item["id"], "answer": got[0], "confidence": got[1]})
        return litellm.completion(model="gpt-4o-mini", messages=messages,
                                  mock_response=json.dumps({"answers": answers}))

    def count(self, model: str) -> int:
        return sum(1 for m, _ in self.calls if m == model)

    def items(self, model: str) -> int:
        return sum(n for m, n in self.calls if m == model)


def register_rule(rule: Rule) -> RoutedLLM:
    handler = RoutedLLM(rule)
    litellm.custom_provider_map = [{"provider": "fake", "custom_handler": handler}]
    litellm.utils.custom_llm_setup()
    return handler
