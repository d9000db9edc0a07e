"""The memory agent (DESIGN §6): what the agents remember and how it is kept tidy: lessons
and examples, maintenance (consolidate, promote, forget), export, and the conflict judge. The
store itself (PostgreSQL + pgvector) is shared infrastructure: `dia_assets.platform.memory`."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dia_assets.platform.lazy import lazy_exports

if TYPE_CHECKING:
    from dia_assets.agents.memory.policy import MaintenancePolicy

# Each name is imported from its module on first use (PEP 562), so importing one
# submodule (the Dagster code location, a run worker) does not import them all.
_EXPORTS = {
    "MaintenancePolicy": "dia_assets.agents.memory.policy",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


__all__ = ["MaintenancePolicy"]
