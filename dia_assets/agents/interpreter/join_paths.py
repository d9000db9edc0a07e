"""Join paths: the shortest foreign-key path between every pair of related sources, over the
foreign keys chosen for the schema (HIGH confidence), never over a column's alternative parents."""

from __future__ import annotations

from collections import deque

from dia_assets.contracts.interpretation import ForeignKey, JoinPath, Source
from dia_assets.contracts.policy import HIGH


def join_paths(sources: list[Source], fks: list[ForeignKey], min_confidence: float = HIGH) -> list[JoinPath]:
    """Shortest foreign-key path between every pair of related sources."""
    best: dict[frozenset[str], ForeignKey] = {}
    for fk in fks:  # between two tables, join on the strongest relationship
        pair = frozenset((fk.from_.source, fk.to.source))
        if fk.confidence >= min_confidence and len(pair) == 2 and (
            pair not in best or fk.confidence > best[pair].confidence
        ):
            best[pair] = fk
    graph: dict[str, list[tuple[str, str]]] = {s.name: [] for s in sources}
    for fk in sorted(best.values(), key=lambda f: (f.from_.source, f.to.source)):
        cond = " AND ".join(
            f"{fk.from_.source}.{a} = {fk.to.source}.{b}"
            for a, b in zip(fk.from_.columns, fk.to.columns, strict=True)
        )
        graph[fk.from_.source].append((fk.to.source, cond))
        graph[fk.to.source].append((fk.from_.source, cond))
    paths = []
    names = sorted(graph)
    for start in names:
        prev: dict[str, tuple[str, str] | None] = {start: None}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            for nxt, cond in graph[node]:
                if nxt not in prev:
                    prev[nxt] = (node, cond)
                    queue.append(nxt)
        for end in names:
            if end <= start or end not in prev:
                continue
            hops, node = [], end
            while prev[node] is not None:
                parent, cond = prev[node]  # type: ignore[misc]
                hops.append((node, cond))
                node = parent
            hops.reverse()
            paths.append(JoinPath(sources=[start] + [h[0] for h in hops], joins=[h[1] for h in hops]))
    return paths
