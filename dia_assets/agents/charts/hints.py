"""What the warehouse knows about a result's columns, for the chart rules: the semantic type
of a column the result passes through unchanged (`first_name` from `customer.first_name`).

An aggregate's source type is not its own (COUNT(DISTINCT customer_id) is no `id`), so only a
result column named as its single source column takes that column's type.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from dia_assets.contracts.manifest import Manifest
from dia_assets.platform.workspace import Workspace


def semantic_types(lineage: Mapping[str, list[str]], manifest: Manifest | None) -> dict[str, str]:
    """Result column -> semantic type, for pass-through columns the manifest describes."""
    if manifest is None:
        return {}
    types = {(t.name.lower(), c.name.lower()): c.semantic_type for t in manifest.tables for c in t.columns}
    out: dict[str, str] = {}
    for column, sources in lineage.items():
        if len(sources) != 1 or "." not in sources[0]:
            continue
        table, _, source = sources[0].rpartition(".")
        table = table.rpartition(".")[2]  # schema-qualified names: the table's own name
        if source.lower() == column.lower() and (table.lower(), source.lower()) in types:
            out[column] = types[(table.lower(), source.lower())]
    return out


def workspace_semantic_types(lineage: Mapping[str, list[str]], workspace: str | Path) -> dict[str, str]:
    """`semantic_types` over the workspace's schema/manifest.json (none when it is missing or unreadable)."""
    path = Workspace(workspace).manifest
    try:
        manifest = Manifest.read(path) if path.exists() else None
    except (OSError, ValueError):
        manifest = None
    return semantic_types(lineage, manifest)
