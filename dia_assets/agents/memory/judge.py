"""An optional LLM conflict judge through litellm (Data Agents §3-B2, "explicit confirmation").

The store works without it (rules only). litellm is imported on first call, never at import.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from dia_assets.platform.memory.conflicts import ConflictJudge, JudgeVerdict
from dia_assets.platform.memory.models import MemoryItem, NewMemory
from dia_assets.platform.settings import get_settings

_PROMPT = Path(__file__).parent / "prompts" / "conflict_judge.yaml"
_JSON = re.compile(r"\{.*\}", re.DOTALL)


@lru_cache(maxsize=1)
def _prompt() -> dict[str, str]:
    return yaml.safe_load(_PROMPT.read_text())


def parse_verdict(text: str) -> JudgeVerdict:
    """Map the model's JSON answer to a verdict; anything unreadable keeps both (safe)."""
    match = _JSON.search(text or "")
    try:
        data = json.loads(match.group(0)) if match else {}
    except json.JSONDecodeError:
        data = {}
    if data.get("conflict") is False:
        return JudgeVerdict.NO_CONFLICT
    prefer = str(data.get("prefer", "both")).lower()
    return {"new": JudgeVerdict.NEW_WINS, "old": JudgeVerdict.OLD_WINS}.get(
        prefer, JudgeVerdict.KEEP_BOTH
    )


def litellm_conflict_judge(model: str | None = None, **completion_kwargs: Any) -> ConflictJudge:
    """A judge calling `model` (default `DIA_MODEL`); kwargs go to `litellm.completion`."""
    model = model or get_settings().model or ""
    if not model:
        raise ValueError("no model for the conflict judge: pass one or set DIA_MODEL")

    def judge(new: NewMemory, old: MemoryItem) -> JudgeVerdict:
        prompt = _prompt()
        user = prompt["user"].format(
            probe=new.probe_sql,
            old_id=old.id,
            kind=new.kind.value,
            old_uses=old.use_count,
            old_successes=old.success_count,
            old_title=old.title,
            old_body=old.body,
            new_confidence=new.confidence,
            new_title=new.title,
            new_body=new.body,
        )
        from dia_assets.platform.model.litellm import completion

        response = completion(
            model=model,
            messages=[
                {"role": "system", "content": prompt["system"]},
                {"role": "user", "content": user},
            ],
            **completion_kwargs,
        )
        return parse_verdict(response.choices[0].message.content or "")

    return judge
