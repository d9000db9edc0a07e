"""The questions file and result tables as Markdown: what the Dagster code location needs when
it loads (partition keys, metadata), kept apart from the agent (run.py) so that loading the
definitions, in every run worker too, does not import the agent, sqlglot and the charts."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from dia_assets.agents.data_folder import questions_file
from dia_assets.platform.markdown import table


def default_questions_path() -> Path | None:
    """DIA_QUESTIONS, else the data folder's questions.yaml, else None (agents/data_folder.py)."""
    return questions_file()


def load_questions(path: str | Path | None = None) -> list[dict[str, str]]:
    """[{id, question}] from a YAML list; ids must be unique partition keys. An item may name
    `follows: <id>`: it is then a follow-up built on that question's accepted SQL."""
    target = Path(path) if path else default_questions_path()
    if target is None or not target.exists():
        return []
    items = yaml.safe_load(target.read_text(encoding="utf-8")) or []
    out, seen = [], set()
    for item in items:
        qid = str(item.get("id") or slug(item["question"]))
        if qid in seen:
            raise ValueError(f"duplicate question id {qid!r} in {target}")
        seen.add(qid)
        entry = {"id": qid, "question": str(item["question"]).strip()}
        if item.get("follows"):
            entry["follows"] = str(item["follows"])
        out.append(entry)
    return out


def slug(text: str, limit: int = 60) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:limit] or "question"


def markdown_table(columns: list[str], rows: list[list[Any]], limit: int = 20) -> str:
    """The first `limit` rows of a result; the values are data, escaped by platform/markdown."""
    if not columns:
        return ""
    return table(columns, rows[:limit])
