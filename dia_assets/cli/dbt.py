"""`dia dbt export DIR`: the built warehouse as a dbt project (dbt-core with dbt-duckdb, dbt-postgres or
dbt-spark).
Mounted in dia_assets/cli/app.py; the project is written by the Schema Creator's `dbt_export`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

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
        help="The warehouse dbt reads and builds in: a DuckDB file, a PostgreSQL URL or a local spark:// URL "
             "(default DIA_WAREHOUSE, else the workspace's).")] = None,
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
    from dia_assets.agents.schema_creator.dbt_export import schema_problem
    from dia_assets.platform.warehouse import target_dialect

    if problem := schema_problem(schema):
        fail(f"--schema: {problem}", code=EXIT_USAGE)
    ws = use_workspace(workspace)
    wh = warehouse or default_warehouse(ws)
    if target_dialect(wh).file_based and not Path(wh).is_file():
        fail(f"no warehouse at {wh}", "build it first with `dia build DATA_DIR`")
    done = _export(ws, wh, directory, schema)
    if as_json:
        echo_json({"project": str(done.root), "warehouse": done.warehouse, "schema": done.schema,
                   "refined_models": done.refined_models, "reject_models": done.reject_models,
                   "tests": done.tests})
    else:
        typer.echo(done.summary())
    say(quiet)(f"run: dbt build --project-dir {directory} --profiles-dir {directory}")


def _export(ws: Path, wh: str, directory: Path, schema: str) -> Any:
    """Export the workspace's installed build over `wh` into `directory` (fails the command on error)."""
    from dia_assets.agents.lineage.index import LineageError, workspace_manifest
    from dia_assets.agents.schema_creator.dbt_export import ExportError, export_project
    from dia_assets.contracts.interpretation import Interpretation

    try:
        manifest = workspace_manifest(ws)
    except LineageError as exc:
        fail(str(exc))
    interp_path = Workspace(ws).interpretation
    interp = Interpretation.read(interp_path) if interp_path.exists() else None
    try:
        return export_project(manifest, interp, wh, directory, schema=schema)
    except ExportError as exc:
        fail(str(exc))


@dbt_app.command("tasks")
def tasks(
    directory: Annotated[Path, typer.Argument(help="Folder to write the task set to (Spider2-DBT's layout).")],
    name: Annotated[str, typer.Option(help="Instance id prefix and database name, e.g. hr -> hr001.")] = "dia",
    instances: Annotated[int, typer.Option("--instances", "-n", min=1, help="How many instances.")] = 10,
    warehouse: Annotated[str | None, typer.Option(
        help="The DuckDB warehouse (default DIA_WAREHOUSE, else the workspace's).")] = None,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Write small dbt completion tasks from the installed build: its `dbt export` plus derived
    models (aggregates and joins along foreign keys) is the gold project; each instance removes
    or breaks one to three of them. Score with `dia eval --tasks spider2-dbt DIR`."""
    import tempfile

    from dia_assets.agents.dbt_completion import generate_tasks, write_task_files
    from dia_assets.platform.warehouse import target_dialect

    ws = use_workspace(workspace)
    dialect = target_dialect(warehouse or default_warehouse(ws))
    if not dialect.file_based:  # the gold and the instances are DuckDB files
        fail(f"dia dbt tasks needs a DuckDB warehouse, not {dialect.title or dialect.name} "
             f"({dialect.redacted_target})", code=EXIT_USAGE)
    wh = Path(warehouse or default_warehouse(ws))
    if not wh.is_file():
        fail(f"no warehouse at {wh}", "build it first with `dia build DATA_DIR`")
    with tempfile.TemporaryDirectory() as tmp:
        _export(ws, str(wh), Path(tmp) / "project", "dbt")
        try:
            made = generate_tasks(Path(tmp) / "project", wh, directory, name, instances)
        except (ValueError, RuntimeError) as exc:
            fail(str(exc))
    write_task_files(directory, made)
    if as_json:
        echo_json({"root": str(directory), "instances": [iid for iid, _i, _s in made]})
    else:
        typer.echo(f"wrote {len(made)} instances to {directory}")
    say(quiet)(f"run: dia eval --tasks spider2-dbt {directory} --model oracle")
