"""Data Interpreter: profile raw sources into an interpretation by executing code."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dia_assets.platform.lazy import lazy_exports

if TYPE_CHECKING:
    from dia_assets.agents.interpreter.interpreter import interpret

# Each name is imported from its module on first use (PEP 562), so importing one
# submodule (the Dagster code location, a run worker) does not import them all.
_EXPORTS = {
    "interpret": "dia_assets.agents.interpreter.interpreter",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


__all__ = ["interpret"]
