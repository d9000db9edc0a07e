"""Memory as the Query Generator sees it: a small protocol (recall references, pull a body,
verify it by its probe, record outcomes, write lessons), an in-process implementation for
tests and one-off runs, and an adapter to the shared PostgreSQL store (issue 4).

A lesson reaches an answer only after its precondition probe confirms on the current
database: first value of the first row truthy (the memory package's convention).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from dia_assets.agents.query.schema import tokens
from dia_assets.platform.settings import get_settings
from dia_assets.platform.workspace import Workspace

ProbeRunner = Callable[[str], Sequence[Sequence[Any]]]
KINDS = ("join", "aggregation", "filter", "output_convention", "grounding", "formula", "preference")


@dataclass
class Ref:
    id: str
    title: str
    score: float
    kind: str = ""


@dataclass
class Item:
    id: str
    title: str
    body: str
    probe_sql: str | None
    kind: str = "aggregation"
    tier: str = "session"


@dataclass
class Lesson:
    kind: str
    title: str
    rule: str
    probe_sql: str
    evidence: list[str] = field(default_factory=list)
    question: str | None = None
    tier: str = "session"


class QueryMemory(Protocol):
    def recall(self, query: str, k: int = 5) -> list[Ref]: ...

    def pull(self, item_id: str) -> Item | None: ...

    def verify(self, item: Item, probe: ProbeRunner) -> tuple[bool, str]: ...

    def record_outcome(self, item_id: str, success: bool) -> None: ...

    def write_lesson(self, lesson: Lesson) -> str: ...


def probe_confirms(rows: Sequence[Sequence[Any]]) -> bool:
    return bool(rows) and len(rows[0]) > 0 and bool(rows[0][0])


def run_probe(item: Item, probe: ProbeRunner) -> tuple[bool, str]:
    if not item.probe_sql:
        return (item.tier == "example", "example: confirm names at use" if item.tier == "example"
                else "lesson without a probe: not usable")
    try:
        rows = probe(item.probe_sql)
    except Exception as err:  # failing to execute refutes: never serve on doubt
        return False, f"probe failed: {type(err).__name__}: {err}"[:300]
    ok = probe_confirms(rows)
    first = repr(rows[0][0]) if rows and len(rows[0]) else "no rows"
    return ok, f"probe {'confirmed' if ok else 'refuted'} (first value {first})"


class InMemoryMemory:
    """Process-local memory with word-overlap recall: tests, benchmarks, `--no-memory-store`."""

    def __init__(self, items: list[Item] | None = None) -> None:
        self.items: dict[str, Item] = {}
        self.outcomes: list[tuple[str, bool]] = []
        self.lessons: list[Lesson] = []
        for item in items or []:
            self.items[item.id] = item

    def add(self, item: Item) -> Item:
        self.items[item.id] = item
        return item

    def recall(self, query: str, k: int = 5) -> list[Ref]:
        q = tokens(query)
        scored = []
        for item in self.items.values():
            words = tokens(f"{item.title} {item.body}")
            overlap = len(q & words) / (len(q) or 1)
            if overlap > 0:
                scored.append(Ref(item.id, item.title, round(overlap, 3), item.kind))
        return sorted(scored, key=lambda r: -r.score)[:k]

    def pull(self, item_id: str) -> Item | None:
        return self.items.get(str(item_id))

    def verify(self, item: Item, probe: ProbeRunner) -> tuple[bool, str]:
        return run_probe(item, probe)

    def record_outcome(self, item_id: str, success: bool) -> None:
        self.outcomes.append((str(item_id), success))

    def write_lesson(self, lesson: Lesson) -> str:
        self.lessons.append(lesson)
        item_id = f"m{len(self.items) + 1}"
        self.items[item_id] = Item(item_id, lesson.title, lesson.rule, lesson.probe_sql, lesson.kind, lesson.tier)
        return item_id


class StoreMemory:
    """Adapter to `dia_assets.platform.memory.MemoryStore` (PostgreSQL + pgvector).

    `scope` is the warehouse fingerprint: session lessons are recalled only on the database
    they were learned on; examples and cross-session lessons everywhere."""

    def __init__(self, store: Any, scope: str) -> None:
        self.store = store
        self.scope = scope

    def recall(self, query: str, k: int = 5) -> list[Ref]:
        from dia_assets.platform.memory import MemoryFilter

        refs = self.store.retrieve(query, k=k, filters=MemoryFilter(scope=self.scope))
        return [Ref(str(r.id), r.title, round(float(r.score), 3), str(r.kind)) for r in refs]

    def pull(self, item_id: str) -> Item | None:
        try:
            item = self.store.get(int(item_id))
        except (KeyError, ValueError):
            return None
        return Item(str(item.id), item.title, item.body, item.probe_sql, str(item.kind), str(item.tier))

    def verify(self, item: Item, probe: ProbeRunner) -> tuple[bool, str]:
        result = self.store.verify([int(item.id)], probe, scope=self.scope)
        if not result:
            return False, "item not found"
        return bool(result[0].usable), f"{result[0].outcome}: {result[0].detail}"

    def record_outcome(self, item_id: str, success: bool) -> None:
        self.store.record_outcome(int(item_id), success=success, scope=self.scope, note="query generator")

    def write_lesson(self, lesson: Lesson) -> str:
        from dia_assets.platform.memory import Kind, NewMemory, Tier

        result = self.store.insert(NewMemory(
            tier=Tier(lesson.tier), kind=Kind(lesson.kind if lesson.kind in KINDS else "aggregation"),
            title=lesson.title[:500], body=lesson.rule, probe_sql=lesson.probe_sql,
            evidence=lesson.evidence or ["written by the query generator"], scope=self.scope,
            question=lesson.question,
        ))
        return str(result.id)


def warehouse_fingerprint(warehouse: str) -> str:
    """The memory scope of a warehouse: a DuckDB file, or a PostgreSQL URL."""
    from dia_assets.platform.warehouse.base import target_dialect
    from dia_assets.platform.warehouse.fingerprint import database_fingerprint

    text = str(warehouse)
    if not target_dialect(text).file_based:
        import psycopg

        with psycopg.connect(text) as con:
            return database_fingerprint(con)
    return database_fingerprint(text)


def open_store_memory(warehouse: str, workspace: str | None = None) -> StoreMemory | None:
    """The shared store for a warehouse, or None when it cannot be opened."""
    try:
        from dia_assets.platform.memory import MemoryStore

        pgdata = None
        if workspace:
            pgdata = Workspace(workspace).pgdata
        store = MemoryStore.open(url=get_settings().memory_url, pgdata=pgdata)
        return StoreMemory(store, warehouse_fingerprint(warehouse))
    except Exception:
        return None


class FreshMemory:
    """Memory for a replanned answer (`dia/fresh_memory` run tag): the lessons the previous,
    failed answer used are held back, so the re-answer does not repeat what led it astray;
    everything else is recalled and verified as usual, and new lessons are written."""

    def __init__(self, inner: QueryMemory, exclude: set[str]) -> None:
        self.inner, self.exclude = inner, {str(i) for i in exclude}

    def recall(self, query: str, k: int = 5) -> list[Ref]:
        refs = self.inner.recall(query, k + len(self.exclude))
        return [r for r in refs if str(r.id) not in self.exclude][:k]

    def pull(self, item_id: str) -> Item | None:
        return None if str(item_id) in self.exclude else self.inner.pull(item_id)

    def verify(self, item: Item, probe: ProbeRunner) -> tuple[bool, str]:
        return self.inner.verify(item, probe)

    def record_outcome(self, item_id: str, success: bool) -> None:
        self.inner.record_outcome(item_id, success)

    def write_lesson(self, lesson: Lesson) -> str:
        return self.inner.write_lesson(lesson)


def used_in_previous_answer(workspace: str | Path, question_id: str) -> set[str]:
    """Ids of the memory items the last recorded answer of a question used."""
    path = Workspace(workspace).query(question_id).result
    if not path.exists():
        return set()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    return {str(m.get("id")) for m in data.get("memory_used") or [] if m.get("id") is not None}
