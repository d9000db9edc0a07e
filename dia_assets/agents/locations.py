"""Where things live by default, from the environment: one answer for the CLI, the
agents and the Dagster resources."""

from __future__ import annotations

from pathlib import Path

from dia_assets.platform.settings import get_settings
from dia_assets.platform.workspace import Workspace


def workspace_root() -> Path:
    """The shared workspace W (DESIGN §4): `DIA_WORKSPACE`, default `dia_workspace`."""
    return get_settings().workspace


def data_dir() -> Path:
    """Raw files to interpret: `DIA_DATA_DIR`, default `examples/data`."""
    return get_settings().data_dir


def default_warehouse(workspace: str | Path | None = None) -> str:
    """`DIA_WAREHOUSE` (a DuckDB or SQLite file, or a PostgreSQL URL), else
    `<workspace>/warehouse.duckdb`."""
    return get_settings().warehouse or str(Workspace(workspace or workspace_root()).warehouse)
