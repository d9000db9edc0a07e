"""The memory agent (DESIGN §6): what the agents remember and how it is kept tidy: lessons
and examples, maintenance (consolidate, promote, forget), export, and the conflict judge. The
store itself (PostgreSQL + pgvector) is shared infrastructure: `dia_assets.platform.memory`."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dia_assets.agents.memory.policy import MaintenancePolicy

# Each name is imported from its module on first use (PEP 562), so importing one
# submodule (the Dagster code location, a run worker) does not import them all.
_EXPORTS = {
    "MaintenancePolicy": "dia_assets.agents.memory.policy",
}


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


__all__ = ["MaintenancePolicy"]
