"""Question/SQL example pairs from JSONL: the `example` tier (DIA App. F.1).

One JSON object per line:
    {"question": "...", "sql": "...",                      required (`SQL` also accepted)
     "notes": {"table.column": "meaning"} or "text",      optional column notes
     "scope": "db-...", "db_id": "...",                    optional database id
     "kind": "join", "evidence": "...", "title": "..."}    optional
BIRD's train.json rows converted to JSONL load as they are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dia_assets.platform.memory.models import Kind, NewMemory, Tier

_JOIN = re.compile(r"\bjoin\b", re.IGNORECASE)
_AGG = re.compile(r"\b(group\s+by|count|sum|avg|min|max)\b", re.IGNORECASE)
_ORDER = re.compile(r"\b(order\s+by|limit)\b", re.IGNORECASE)


def infer_kind(sql: str) -> Kind:
    """A cheap label for metadata filters: join > aggregation > output shape > filter."""
    if _JOIN.search(sql):
        return Kind.JOIN
    if _AGG.search(sql):
        return Kind.AGGREGATION
    if _ORDER.search(sql):
        return Kind.OUTPUT_CONVENTION
    return Kind.FILTER


def example_from_record(record: dict[str, Any], default_scope: str = "") -> NewMemory:
    question = str(record.get("question") or "").strip()
    sql = str(record.get("sql") or record.get("SQL") or record.get("query") or "").strip()
    if not question or not sql:
        raise ValueError("each example needs a non-empty `question` and `sql`")
    notes = record.get("notes") or {}
    if isinstance(notes, str):
        notes = {"note": notes}
    evidence = record.get("evidence") or []
    kind = Kind(record["kind"]) if record.get("kind") else infer_kind(sql)
    return NewMemory(
        tier=Tier.EXAMPLE,
        kind=kind,
        title=str(record.get("title") or question)[:200],
        question=question,
        body=sql,
        notes={str(k): str(v) for k, v in notes.items()},
        evidence=[{"text": evidence, "source": "import"}]
        if isinstance(evidence, str)
        else evidence,
        scope=str(record.get("scope") or record.get("db_id") or default_scope),
    )


def read_examples(path: Path, default_scope: str = "") -> Iterator[NewMemory]:
    """Parse a JSONL file; errors name the line."""
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield example_from_record(json.loads(line), default_scope)
            except (ValueError, TypeError) as err:
                raise ValueError(f"{path}:{number}: {err}") from err
