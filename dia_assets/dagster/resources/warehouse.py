"""The warehouse: DuckDB through dagster-duckdb's `DuckDBResource` by default
(`<workspace>/warehouse.duckdb`); `DIA_WAREHOUSE` may name another DuckDB file or a
`postgresql://` URL, in which case the Schema Creator loads PostgreSQL instead."""

from __future__ import annotations

from pathlib import Path

from dagster_duckdb import DuckDBResource

from dia_assets.dagster.resources.workspace import default_workspace
from dia_assets.platform.remote_workspace import working_copy
from dia_assets.platform.settings import get_settings
from dia_assets.platform.warehouse.base import target_dialect
from dia_assets.platform.workspace import Workspace


def default_duckdb_path(workspace: str | None = None) -> str:
    env = get_settings().warehouse
    if env and target_dialect(env).file_based:
        return str(Path(env).resolve())
    return str(Workspace(working_copy(workspace or default_workspace())).warehouse.resolve())


def duckdb_resource(workspace: str | None = None) -> DuckDBResource:
    """The `duckdb` resource the `warehouse` asset and its checks use."""
    return DuckDBResource(database=default_duckdb_path(workspace))


def warehouse_target(duckdb: DuckDBResource) -> str:
    """Where to load: the PostgreSQL URL in `DIA_WAREHOUSE` if set, else the DuckDB file."""
    env = get_settings().warehouse
    return env if not target_dialect(env).file_based else duckdb.database
