"""`memory/lessons.md`: the lessons as a domain expert reviews them (DIA App. F.2).

Each lesson shows its rule, the probe that must confirm before use, its evidence, its
outcome counts and its place in the version graph. Examples are only counted: the pool
can hold 100,000 pairs and they are reviewed at their source.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from dia_assets.platform.memory.models import LESSON_TIERS, MemoryItem, Status, Tier, utcnow
from dia_assets.platform.memory.retrieval import MemoryFilter
from dia_assets.platform.memory.store import MemoryStore

_TIER_TITLES = {Tier.CROSS_SESSION: "Cross-session lessons", Tier.SESSION: "Session lessons"}


def _lesson(item: MemoryItem, links: list[str]) -> list[str]:
    lines = [
        f"### #{item.id} [{item.kind.value}] {item.title}",
        "",
        f"- status: {item.status.value}; scope: `{item.scope or '-'}`; importance {item.importance:.2f}; "
        f"confidence {item.confidence:.2f}",
        f"- used {item.use_count}, succeeded {item.success_count}; probes confirmed "
        f"{item.verify_pass_count}, refuted {item.verify_fail_count}",
        f"- created {item.created_at:%Y-%m-%d %H:%M}, updated {item.updated_at:%Y-%m-%d %H:%M}",
    ]
    if item.question:
        lines.append(f"- source question: {item.question}")
    lines += [
        "",
        f"**Rule.** {item.body}",
        "",
        "**Precondition probe.**",
        "",
        "```sql",
        (item.probe_sql or "").strip(),
        "```",
    ]
    if item.evidence:
        lines += ["", "**Evidence.**", ""]
        lines += [
            f"- ({e.source}{', ' + e.scope if e.scope else ''}) {e.text}" for e in item.evidence
        ]
    if links:
        lines += ["", "**Versions.** " + "; ".join(links)]
    return [*lines, ""]


def render_lessons(store: MemoryStore, include_inactive: bool = True) -> str:
    statuses = (
        [Status.ACTIVE, Status.SUPERSEDED, Status.ARCHIVED] if include_inactive else [Status.ACTIVE]
    )
    lessons: list[MemoryItem] = []
    offset = 0
    while True:
        page = store.list_items(
            MemoryFilter(tiers=list(LESSON_TIERS), statuses=statuses), limit=1000, offset=offset
        )
        lessons += page
        offset += len(page)
        if len(page) < 1000:
            break
    links: dict[int, list[str]] = defaultdict(list)
    for item in lessons:
        if item.status != Status.ACTIVE:
            continue
        _, edges = store.history(item.id)
        for e in edges:
            if e.dst_id == item.id:
                links[item.id].append(
                    f"{e.relation} from #{e.src_id} ({e.detail.get('rule') or e.detail.get('reason', '')})"
                )
            elif e.src_id == item.id:
                links[item.id].append(f"{e.relation} to #{e.dst_id}")
    counts = store.counts()
    total_examples = sum(counts.get(Tier.EXAMPLE.value, {}).values())
    out = [
        "# DIA memory: lessons for review",
        "",
        f"Generated {utcnow():%Y-%m-%d %H:%M} UTC from {store.describe()}.",
        "A lesson changes an answer only after its precondition probe confirms on the current data.",
        "",
        f"Active: {sum(sum(v.values()) for v in counts.values())} items "
        f"({total_examples} examples, not listed; see `dia memory list --tier example`).",
        "",
    ]
    for tier in (Tier.CROSS_SESSION, Tier.SESSION):
        active = [i for i in lessons if i.tier == tier and i.status == Status.ACTIVE]
        out += [f"## {_TIER_TITLES[tier]} ({len(active)})", ""]
        if not active:
            out += ["None yet.", ""]
        for item in sorted(active, key=lambda i: (i.scope, i.kind.value, i.id)):
            out += _lesson(item, links[item.id])
    inactive = [i for i in lessons if i.status != Status.ACTIVE]
    out += [f"## Superseded and archived ({len(inactive)})", ""]
    out += [
        f"- #{i.id} [{i.tier.value}/{i.kind.value}] {i.status.value}: {i.title}" for i in inactive
    ] or ["None."]
    return "\n".join(out) + "\n"


def export_lessons(store: MemoryStore, path: Path) -> Path:
    """Write `lessons.md` (conventionally `<workspace>/memory/lessons.md`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_lessons(store))
    return path
