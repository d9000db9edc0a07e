"""Warehouses per engine (design review 2026-12-02, §6.2): base.py holds the `Dialect`, the
REGISTRY and the `Connection` protocol; each engine module registers itself on import."""

from dia_assets.platform.warehouse import duckdb, postgres, sqlite  # noqa: F401 - they register
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
