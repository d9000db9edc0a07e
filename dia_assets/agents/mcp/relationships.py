"""The warehouse's relationships for an MCP host: every foreign key of the manifest the
warehouse was built from, and the shortest join path between two tables over them (the
keys taken in either direction, as a join can be)."""

from __future__ import annotations

import heapq
from typing import Any


def foreign_keys(manifest: Any, table: str | None = None) -> list[dict[str, Any]]:
    """Each foreign key as a join condition; only those touching `table` when given."""
    out = []
    for t in sorted(manifest.tables, key=lambda t: t.name):
        for fk in t.foreign_keys:
            if table and table.lower() not in (t.name.lower(), fk.ref_table.lower()):
                continue
            join = " AND ".join(f"{t.name}.{c} = {fk.ref_table}.{r}" for c, r in zip(fk.columns, fk.ref_columns,
                                                                                     strict=False))
            out.append({"table": t.name, "columns": list(fk.columns), "ref_table": fk.ref_table,
                        "ref_columns": list(fk.ref_columns), "join": join, "enforced": bool(fk.enforced),
                        "origin": fk.origin, "confidence": fk.confidence})
    return out


def join_path(keys: list[dict[str, Any]], start: str, goal: str) -> dict[str, list[str]] | None:
    """The fewest joins from `start` to `goal`; among paths as short, the one over the most
    confident keys (a path's cost: (joins, summed doubt), doubt = 1 - confidence)."""
    edges: dict[str, list[tuple[str, str, float]]] = {}
    for k in keys:
        doubt = 1.0 - min(1.0, max(0.0, k.get("confidence") or 0.0))
        edges.setdefault(k["table"], []).append((k["ref_table"], k["join"], doubt))
        edges.setdefault(k["ref_table"], []).append((k["table"], k["join"], doubt))
    best: dict[str, tuple[int, float]] = {start: (0, 0.0)}
    previous: dict[str, tuple[str, str]] = {}
    queue: list[tuple[int, float, str]] = [(0, 0.0, start)]
    while queue:
        hops, doubt_so_far, here = heapq.heappop(queue)
        if here == goal:
            break
        if (hops, doubt_so_far) > best[here]:
            continue
        for there, join, doubt in sorted(edges.get(here, [])):
            cost = (hops + 1, doubt_so_far + doubt)
            if cost < best.get(there, (len(keys) + 2, 0.0)):
                best[there], previous[there] = cost, (here, join)
                heapq.heappush(queue, (*cost, there))
    if goal not in best:
        return None
    tables, joins = [goal], []
    while tables[-1] != start:
        here, join = previous[tables[-1]]
        tables.append(here)
        joins.append(join)
    return {"tables": tables[::-1], "joins": joins[::-1]}
