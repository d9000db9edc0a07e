"""Schema linking through the semantic catalog: the tables behind the catalog nodes that a
question retrieves (dense + sparse), for the Query Generator's opening prompt."""

from __future__ import annotations

from collections.abc import Callable

from dia_assets.agents.catalog.store import CatalogStore
from dia_assets.agents.memory.store import MemoryStore


def catalog_linker(store: MemoryStore, scope: str, k: int = 8) -> Callable[[str], list[str]]:
    """question -> tables of its top-k catalog hits, best first, each once."""
    catalog = CatalogStore(store)

    def link(question: str) -> list[str]:
        tables = [h.node.table for h in catalog.search(question, scope=scope, k=k) if h.node.table]
        return list(dict.fromkeys(t for t in tables if t))

    return link
