"""Lineage of answers and values: which answers read a table or column, and where a value
came from (file, row range, parse). Framework-free; the CLI and the Dagster asset call it."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dia_assets.agents.lineage.index import LineageError, answers, workspace_manifest

# Each name is imported from its module on first use (PEP 562), so importing the package
# (a sibling agent, the Dagster code location) loads none of them until it is used.
_EXPORTS = {
    "LineageError": "dia_assets.agents.lineage.index",
    "answers": "dia_assets.agents.lineage.index",
    "workspace_manifest": "dia_assets.agents.lineage.index",
}


def __getattr__(name: str) -> Any:
    target = _EXPORTS.get(name)
    if target is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module, _, attr = target.partition(":")
    value = getattr(importlib.import_module(module), attr or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = [
    "LineageError",
    "answers",
    "workspace_manifest",
]
