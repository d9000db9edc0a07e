"""The model half of the cascade (Data Agents §III-B): what the embedding stage left
ambiguous goes to the light model; what the light model is unsure of, or did not answer,
goes to the strong model. Any stage can be off; nothing is dropped: an item nobody could
decide is recorded as `unresolved`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from dia_assets.agents.semantic_ops.judge import Judge, JudgeTask
from dia_assets.agents.semantic_ops.models import (
    CascadeConfig,
    Decision,
    SemanticModelUnavailable,
    StageUsage,
)


@dataclass
class Pending:
    """An item the embedding stage did not decide: what the model sees, the embedding's
    score and best guess (used only when both model stages are off)."""

    id: str
    payload: Any
    score: float | None = None
    guess: Any = None


@dataclass
class Models:
    """The two model stages of one operator run (either may be None = switched off)."""

    light: Judge | None = None
    strong: Judge | None = None
    light_confidence: float = 0.8

    @classmethod
    def from_config(cls, config: CascadeConfig) -> Models:
        light = Judge(config.light_model, "light", config.batch_size) if config.light_model else None
        strong = Judge(config.strong_model, "strong", config.batch_size) if config.strong_model else None
        return cls(light, strong, config.light_confidence)

    @property
    def judge(self) -> Judge | None:
        """Who judges the calibration sample: the strong model, else the light one."""
        return self.strong or self.light

    def usage(self) -> list[StageUsage]:
        return [j.usage for j in (self.light, self.strong) if j is not None]


def resolve(pending: Sequence[Pending], task: JudgeTask, models: Models) -> list[Decision]:
    """Decisions for every pending item, each naming the stage that made it."""
    out: list[Decision] = []
    rest = list(pending)
    light_answers: dict[str, Any] = {}
    if models.light is not None and rest:
        try:
            light_answers = models.light.ask(task, [(p.id, p.payload) for p in rest])
        except SemanticModelUnavailable as err:  # keep the light answers it would have accepted
            sure = [p for p in rest if p.id in err.answers and (
                models.strong is None or err.answers[p.id].confidence >= models.light_confidence)]
            err.keep(_answered(sure, err.answers, "light"), models.usage())
            err.answers = {}
            raise
        still: list[Pending] = []
        for p in rest:
            ans = light_answers.get(p.id)
            if ans is not None and (models.strong is None or ans.confidence >= models.light_confidence):
                out.append(Decision(id=p.id, value=ans.value, stage="light", score=p.score,
                                    confidence=ans.confidence))
            else:
                still.append(p)
        rest = still
    if models.strong is not None and rest:
        answers: dict[str, Any] = {}
        try:
            answers = models.strong.ask(task, [(p.id, p.payload) for p in rest])
            missing = [p for p in rest if p.id not in answers]
            if missing:  # one more try, one item per call, before giving up on an item
                for p in missing:
                    answers.update(models.strong.ask(task, [(p.id, p.payload)]))
        except SemanticModelUnavailable as err:  # keep what was decided before the outage
            got = {**answers, **err.answers}
            err.keep(out + _answered([p for p in rest if p.id in got], got, "strong"), models.usage())
            err.answers = {}
            raise
        for p in rest:
            ans = answers.get(p.id)
            if ans is not None:
                out.append(Decision(id=p.id, value=ans.value, stage="strong", score=p.score,
                                    confidence=ans.confidence))
            else:
                out.append(Decision(id=p.id, value=None, stage="unresolved", score=p.score))
        return out
    for p in rest:
        if p.guess is not None:
            out.append(Decision(id=p.id, value=p.guess, stage="embedding_fallback", score=p.score))
        else:
            out.append(Decision(id=p.id, value=None, stage="unresolved", score=p.score))
    return out


def _answered(items: Sequence[Pending], answers: dict[str, Any], stage: str) -> list[Decision]:
    return [Decision(id=p.id, value=answers[p.id].value, stage=stage, score=p.score,  # type: ignore[arg-type]
                     confidence=answers[p.id].confidence) for p in items]
