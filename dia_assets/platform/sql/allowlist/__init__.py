"""The gate's allow-lists: `common.py` for what every dialect shares, one module per dialect
for its vetted functions (`ANONYMOUS`), data types (`TYPES`) and system columns
(`SYSTEM_COLUMNS`). There is no fallback: a dialect without a module here is refused, never
vetted against another engine's list."""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from types import ModuleType

from sqlglot import exp

from dia_assets.platform.sql.allowlist.common import (  # noqa: F401 - the gate's shared lists
    ANONYMOUS_TABLE_FUNCTIONS,
    BUILTIN_SCHEMAS,
    COMMON,
    DENIED_TYPED,
    TABLE_FUNCTIONS,
)


@dataclass(frozen=True)
class AllowList:
    dialect: str
    anonymous: frozenset[str]
    types: frozenset[exp.DataType.Type]
    system_columns: frozenset[str]


def _of(name: str, module: ModuleType) -> AllowList:
    return AllowList(name, module.ANONYMOUS, module.TYPES, module.SYSTEM_COLUMNS)


# every module here but common.py is a dialect's lists, named after the dialect
LISTS: dict[str, AllowList] = {
    m.name: _of(m.name, importlib.import_module(f"{__name__}.{m.name}"))
    for m in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name) if m.name != "common"
}
# the lists by dialect, as the gate's tests read them
ANONYMOUS: dict[str, frozenset[str]] = {name: a.anonymous for name, a in LISTS.items()}
TYPES: dict[str, frozenset[exp.DataType.Type]] = {name: a.types for name, a in LISTS.items()}
SYSTEM_COLUMNS: dict[str, frozenset[str]] = {name: a.system_columns for name, a in LISTS.items()}


class NoAllowList(LookupError):
    """The gate has no vetted lists for this dialect: its SQL is refused."""


def for_dialect(dialect: str) -> AllowList:
    """The dialect's lists; NoAllowList for a dialect nobody vetted (never DuckDB's lists)."""
    try:
        return LISTS[dialect]
    except KeyError:
        raise NoAllowList(f"no SQL allow-list for dialect {dialect!r} (vetted: {', '.join(sorted(LISTS))}); "
                          "its SQL is refused") from None
