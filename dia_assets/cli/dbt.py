"""`dia dbt export DIR`: the built warehouse as a dbt project (dbt-core with dbt-duckdb).
Mounted in dia_assets/cli/app.py; the project is written by the Schema Creator's `dbt_export`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dia_assets.agents.locations import default_warehouse
from dia_assets.cli.common import (
    EXIT_USAGE,
    JsonOpt,
    QuietOpt,
    WorkspaceOpt,
    echo_json,
    fail,
    say,
    use_workspace,
)
from dia_assets.platform.workspace import Workspace

dbt_app = typer.Typer(help="dbt: the built warehouse as a dbt project.", no_args_is_help=True)

@dbt_app.command("export")
def export(
    directory: Annotated[Path, typer.Argument(help="Folder to write the dbt project to (empty, or a previous export).")],
    warehouse: Annotated[str | None, typer.Option(
        help="The DuckDB warehouse dbt reads and builds in (default DIA_WAREHOUSE, else the workspace's).")] = None,
    schema: Annotated[str, typer.Option(
        help="Schema dbt builds the refined models in; reject models go to <schema>_rejects.")] = "dbt",
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Write a dbt project for the installed build: staging tables as sources, one model per
    refined and per reject table (the Schema Creator's load SQL), schema tests from validation.

    `dbt build --project-dir DIR --profiles-dir DIR` then rebuilds every refined and reject table
    in SCHEMA and SCHEMA_rejects of the warehouse. Exit 0 written, 1 no build or not writable, 2 usage."""
    from dia_assets.agents.lineage.index import LineageError, workspace_manifest
    from dia_assets.agents.schema_creator.dbt_export import (
        ExportError,
        export_project,
        schema_problem,
    )
    from dia_assets.contracts.interpretation import Interpretation

    if problem := schema_problem(schema):
        fail(f"--schema: {problem}", code=EXIT_USAGE)
    ws = use_workspace(workspace)
    wh = warehouse or default_warehouse(ws)
    if "://" not in wh and not Path(wh).is_file():
        fail(f"no warehouse at {wh}", "build it first with `dia build DATA_DIR`")
    try:
        manifest = workspace_manifest(ws)
    except LineageError as exc:
        fail(str(exc))
    interp_path = Workspace(ws).interpretation
    interp = Interpretation.read(interp_path) if interp_path.exists() else None
    try:
        done = export_project(manifest, interp, wh, directory, schema=schema)
    except ExportError as exc:
        fail(str(exc))
    if as_json:
        echo_json({"project": str(done.root), "warehouse": done.warehouse, "schema": done.schema,
                   "refined_models": done.refined_models, "reject_models": done.reject_models,
                   "tests": done.tests})
    else:
        typer.echo(done.summary())
    say(quiet)(f"run: dbt build --project-dir {directory} --profiles-dir {directory}")
