"""Lineage of answers and values: which answers read a table or column, and where a value
came from (file, row range, parse). Framework-free; the CLI and the Dagster asset call it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dia_assets.platform.lazy import lazy_exports

if TYPE_CHECKING:
    from dia_assets.agents.lineage.index import LineageError, answers, workspace_manifest

# Each name is imported from its module on first use (PEP 562), so importing the package
# (a sibling agent, the Dagster code location) loads none of them until it is used.
_EXPORTS = {
    "LineageError": "dia_assets.agents.lineage.index",
    "answers": "dia_assets.agents.lineage.index",
    "workspace_manifest": "dia_assets.agents.lineage.index",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


__all__ = [
    "LineageError",
    "answers",
    "workspace_manifest",
]
