"""The model stages of the cascade: one batched litellm call asks a light or strong model
about many items at once (Data Agents §III-C batching), and answers are checked for shape.

Every call goes through `platform.model.litellm` (the one model door: a litellm Router)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml

from dia_assets.agents.semantic_ops.models import SemanticModelUnavailable, StageUsage
from dia_assets.platform.model.errors import ModelUnavailable

Complete = Callable[..., Any]


@lru_cache(maxsize=1)
def prompts() -> dict[str, Any]:
    text = resources.files("dia_assets.prompts").joinpath("semantic_ops.yaml").read_text("utf-8")
    return yaml.safe_load(text)


@dataclass(frozen=True)
class JudgeTask:
    """What the model is asked: a kind, the user's words, and the allowed labels or fields."""

    kind: str  # filter | classify | extract | match | name_groups
    instruction: str = ""
    labels: tuple[str, ...] = ()
    fields: tuple[str, ...] = ()

    def text(self) -> str:
        template = prompts()["tasks"][self.kind]
        for key, value in {
            "instruction": self.instruction,
            "labels": ", ".join(json.dumps(x) for x in self.labels),
            "fields": ", ".join(json.dumps(x) for x in self.fields),
        }.items():
            template = template.replace("{" + key + "}", value)
        return template.strip()

    def valid(self, answer: Any) -> Any:
        """The answer in its expected type, or raise ValueError."""
        if self.kind in ("filter", "match"):
            if isinstance(answer, bool):
                return answer
            if isinstance(answer, str) and answer.strip().lower() in ("true", "yes", "false", "no"):
                return answer.strip().lower() in ("true", "yes")
            raise ValueError(f"expected true or false, got {answer!r}")
        if self.kind == "classify":
            by_fold = {label.casefold(): label for label in self.labels}
            if isinstance(answer, str) and answer.strip().casefold() in by_fold:
                return by_fold[answer.strip().casefold()]
            raise ValueError(f"expected one of {list(self.labels)}, got {answer!r}")
        if self.kind == "extract":
            if not isinstance(answer, dict):
                raise ValueError(f"expected an object with {list(self.fields)}, got {answer!r}")
            return {f: answer.get(f) for f in self.fields}
        if isinstance(answer, str) and answer.strip():
            return answer.strip()
        raise ValueError(f"expected a name, got {answer!r}")


@dataclass
class Answer:
    value: Any
    confidence: float


def _data_block(items: Sequence[tuple[str, Any]]) -> str:
    body = json.dumps([{"id": i, "text": t} for i, t in items], ensure_ascii=False, default=str)
    return "<data>\n" + body.replace("<", "\\u003c").replace(">", "\\u003e") + "\n</data>"


def parse_answers(text: str, task: JudgeTask, ids: set[str]) -> dict[str, Answer]:
    """Valid answers by item id; malformed or unknown entries are left out (the caller
    escalates or records them), never guessed."""
    match = re.search(r"\{.*\}", text or "", re.DOTALL)
    if not match:
        return {}
    try:
        payload = json.loads(match.group(0))
    except json.JSONDecodeError:
        return {}
    out: dict[str, Answer] = {}
    for entry in payload.get("answers", []) if isinstance(payload, dict) else []:
        if not isinstance(entry, dict) or str(entry.get("id")) not in ids:
            continue
        try:
            value = task.valid(entry.get("answer"))
        except ValueError:
            continue
        try:
            confidence = float(entry.get("confidence", 1.0))
        except (TypeError, ValueError):
            confidence = 0.0
        out[str(entry["id"])] = Answer(value, max(0.0, min(1.0, confidence)))
    return out


@dataclass
class Judge:
    """One model stage. `complete` is litellm's completion through the model door; tests
    register a scripted provider with litellm, so this exact path runs offline."""

    model: str
    stage: str
    batch_size: int = 20
    complete: Complete | None = None
    usage: StageUsage = field(init=False)

    def __post_init__(self) -> None:
        self.usage = StageUsage(stage=self.stage, model=self.model)

    def _call(self, messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        from dia_assets.platform.model.litellm import complete_text

        text, usage = complete_text(self.model, messages, self.complete, temperature=0.0)
        return text, usage.as_dict()

    def ask(self, task: JudgeTask, items: Sequence[tuple[str, Any]]) -> dict[str, Answer]:
        """Answers for as many items as the model answered validly, in batches. An
        unreachable model stops the run: SemanticModelUnavailable carries the answers of the
        batches before (row answers only: group names are not rows)."""
        out: dict[str, Answer] = {}
        for start in range(0, len(items), max(1, self.batch_size)):
            batch = list(items[start : start + self.batch_size])
            messages = [
                {"role": "system", "content": prompts()["system"].strip()},
                {"role": "user", "content": task.text() + "\n\n" + _data_block(batch)},
            ]
            try:
                text, usage = self._call(messages)
            except ModelUnavailable as err:
                raise SemanticModelUnavailable(
                    f"semantic {self.stage} {err}", self.stage,
                    answers=out if task.kind != "name_groups" else {}, usage=[self.usage]) from err
            self.usage.add(usage, len(batch))
            out.update(parse_answers(text, task, {i for i, _ in batch}))
        return out
