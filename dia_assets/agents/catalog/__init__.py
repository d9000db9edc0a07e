"""Semantic catalog (Data Agents §III-A): build the label tree, store and search it in the
shared memory, and estimate semantic operators' selectivity from it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dia_assets.platform.lazy import lazy_exports

if TYPE_CHECKING:
    from dia_assets.agents.catalog.estimate import HIGH, LOW, UNKNOWN, Estimate, estimate_filter

# Each name is imported from its module on first use (PEP 562), so importing the package
# (a sibling agent, the Dagster code location) loads none of them until it is used.
_EXPORTS = {
    "HIGH": "dia_assets.agents.catalog.estimate",
    "LOW": "dia_assets.agents.catalog.estimate",
    "UNKNOWN": "dia_assets.agents.catalog.estimate",
    "Estimate": "dia_assets.agents.catalog.estimate",
    "estimate_filter": "dia_assets.agents.catalog.estimate",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


__all__ = [
    "Estimate",
    "HIGH",
    "LOW",
    "UNKNOWN",
    "estimate_filter",
]
