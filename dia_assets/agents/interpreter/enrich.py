"""Optional LLM pass: descriptions, and a verdict on ambiguous keys.

Code-derived facts stay the authority: the LLM adds descriptions (marked as such) and
may confirm or reject keys the code was unsure about; it never changes profile numbers.

Privacy (`DIA_PRIVACY`, see agents/query/gate.py): only in `samples` mode do example values
travel; in `aggregates` and `schema-only` the model sees names and semantic types only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib import resources
from typing import Any

import yaml

from dia_assets.contracts.interpretation import Interpretation
from dia_assets.contracts.policy import is_ambiguous

Complete = Callable[[list[dict[str, Any]]], str]


def _prompt() -> dict[str, str]:
    return yaml.safe_load(resources.files("dia_assets.prompts").joinpath("interpreter.yaml").read_text())


def enrich(interp: Interpretation, complete: Complete, model: str, privacy: str | None = None) -> list[str]:
    """Ask once for the whole catalogue; returns what changed, for the log (the first entry
    says what was sent)."""
    from dia_assets.platform.sql.gate import privacy_mode, shows_values

    mode = privacy_mode(privacy)
    values = shows_values(mode)
    keys: dict[str, Any] = {}
    for fk in interp.foreign_keys:
        if is_ambiguous(fk.confidence):
            keys[f"fk:{fk.from_.source}.{','.join(fk.from_.columns)}->{fk.to.source}"] = fk
    for src in interp.sources:
        if src.primary_key and is_ambiguous(src.primary_key.confidence):
            keys[f"pk:{src.name}"] = src.primary_key
    profile = {
        "sources": [
            {"name": s.name, "columns": [
                {"name": c.name, "type": c.semantic_type, **({"examples": c.examples[:3]} if values else {})}
                for c in s.columns
            ]}
            for s in interp.sources
        ],
        "ambiguous_keys": list(keys),
    }
    prompt = _prompt()
    reply = complete([
        {"role": "system", "content": prompt["system"]},
        {"role": "user", "content": prompt["user"].replace("{profile}", json.dumps(profile, ensure_ascii=False))},
    ])
    data = _parse(reply)
    changes: list[str] = []
    if not values:
        changes.append(f"privacy {mode}: names and types sent, no example values")
    for src in interp.sources:
        entry = data.get("sources", {}).get(src.name) or {}
        if isinstance(entry.get("description"), str):
            src.description, src.description_source = entry["description"][:300], "llm"
            changes.append(f"described {src.name}")
        for col in src.columns:
            text = (entry.get("columns") or {}).get(col.name)
            if isinstance(text, str):
                col.description, col.description_source = text[:300], "llm"
    for item in data.get("keys", []):
        target = keys.get(str(item.get("id")))
        verdict = item.get("verdict")
        if target is not None and verdict in ("confirmed", "rejected"):
            target.llm_verdict = verdict
            changes.append(f"{verdict} {item['id']}")
    interp.llm_model = model
    return changes


def _parse(reply: str) -> dict[str, Any]:
    start, end = reply.find("{"), reply.rfind("}")
    if start < 0 or end <= start:
        return {}
    try:
        data = json.loads(reply[start : end + 1])
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
