"""Data Interpreter: profile raw sources into an interpretation by executing code."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dia_assets.agents.interpreter.interpreter import interpret

# Each name is imported from its module on first use (PEP 562), so importing one
# submodule (the Dagster code location, a run worker) does not import them all.
_EXPORTS = {
    "interpret": "dia_assets.agents.interpreter.interpreter",
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


__all__ = ["interpret"]
