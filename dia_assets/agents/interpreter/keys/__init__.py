"""Primary and foreign keys, found on the data and the names.

The interpreter runs, in order:

1. `primary.find_keys` on each source: candidate keys and the primary key from its own rows;
2. `foreign.Finder.find`: foreign-key candidates (`foreign.py`), the evidence measured for each
   (`features.py`), its confidence (`score.py`: the documented combination), one parent per
   child column set (`assign.assign`, `assign.propagate`);
3. `assign.revise_keys`: the primary keys that depend on the foreign keys; when one changed,
   the foreign keys are found again (the measurements are kept).

A change to how keys are chosen is `score.py` (the combination) or `assign.py` (the choice),
plus regenerated interpretation goldens.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dia_assets.agents.interpreter.keys.assign import assign, revise_keys
    from dia_assets.agents.interpreter.keys.features import Candidate, Measure, Target, family
    from dia_assets.agents.interpreter.keys.foreign import Finder, find_foreign_keys, targets
    from dia_assets.agents.interpreter.keys.primary import find_keys, restore_found_keys
    from dia_assets.agents.interpreter.keys.score import score_terms
    from dia_assets.agents.interpreter.table_info import NOT_KEYABLE

# Each name is imported from its module on first use (PEP 562), like the interpreter package.
_EXPORTS = {
    "find_keys": "dia_assets.agents.interpreter.keys.primary",
    "restore_found_keys": "dia_assets.agents.interpreter.keys.primary",
    "revise_keys": "dia_assets.agents.interpreter.keys.assign",
    "assign": "dia_assets.agents.interpreter.keys.assign",
    "Finder": "dia_assets.agents.interpreter.keys.foreign",
    "find_foreign_keys": "dia_assets.agents.interpreter.keys.foreign",
    "targets": "dia_assets.agents.interpreter.keys.foreign",
    "Candidate": "dia_assets.agents.interpreter.keys.features",
    "Measure": "dia_assets.agents.interpreter.keys.features",
    "Target": "dia_assets.agents.interpreter.keys.features",
    "family": "dia_assets.agents.interpreter.keys.features",
    "score_terms": "dia_assets.agents.interpreter.keys.score",
    "NOT_KEYABLE": "dia_assets.agents.interpreter.table_info",  # exported by the old keys.py
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


__all__ = [
    "NOT_KEYABLE",
    "Candidate",
    "Finder",
    "Measure",
    "Target",
    "assign",
    "family",
    "find_foreign_keys",
    "find_keys",
    "restore_found_keys",
    "revise_keys",
    "score_terms",
    "targets",
]
