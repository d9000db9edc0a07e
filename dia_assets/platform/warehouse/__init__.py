"""Warehouses per engine (design review 2026-12-02, §6.2): base.py holds the `Dialect`, the
REGISTRY and the `Connection` protocol; every other module here is an engine, imported below
so that it registers itself (a new engine is a new file, no list to edit)."""

import importlib
import pkgutil

from dia_assets.platform.warehouse.base import (  # noqa: F401
    REGISTRY,
    Connection,
    Dialect,
    QueryOutput,
    QueryTimeout,
    UnknownDialect,
    connect,
    dialect_for,
    opened,
    target_dialect,
)

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if _module != "base":
        importlib.import_module(f"{__name__}.{_module}")
