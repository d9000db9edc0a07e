"""Schema linking through the semantic catalog: the tables behind the catalog nodes that a
question retrieves (dense + sparse), for the Query Generator's opening prompt."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dia_assets.agents.catalog.store import CatalogStore
from dia_assets.platform.memory.store import MemoryStore
from dia_assets.platform.warehouse.fingerprint import database_fingerprint


def catalog_linker(store: MemoryStore, scope: str, k: int = 8) -> Callable[[str], list[str]]:
    """question -> tables of its top-k catalog hits, best first, each once."""
    catalog = CatalogStore(store)

    def link(question: str) -> list[str]:
        tables = [h.node.table for h in catalog.search(question, scope=scope, k=k) if h.node.table]
        return list(dict.fromkeys(t for t in tables if t))

    return link


def catalog_nodes_for(warehouse: str, memory: Any) -> dict[str, Any] | None:
    """The catalog's nodes for this warehouse, when the query memory's store holds them;
    None when it holds none or is unreachable (estimates then sample the input)."""
    inner = getattr(memory, "store", None)
    if inner is None:
        return None
    try:
        return {n.id: n for n in CatalogStore(inner).nodes(database_fingerprint(warehouse))} or None
    except Exception:  # memory down: no catalog, the question is still answered
        return None


def catalog_link_for(warehouse: str, memory: Any) -> Callable[[str], list[str]] | None:
    """Schema linking through the catalog when the query memory's store holds one for this
    warehouse; None otherwise (linking then uses names and values only)."""
    inner = getattr(memory, "store", None)
    if inner is None or catalog_nodes_for(warehouse, memory) is None:
        return None
    return catalog_linker(inner, database_fingerprint(warehouse))
