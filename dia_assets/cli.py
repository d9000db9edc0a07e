"""`dia`: the command line over the same core the Dagster assets call."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from dia_assets.agents.locations import workspace_root

app = typer.Typer(help="DIA: raw enterprise files to a validated, queryable database.", no_args_is_help=True)


def _mount() -> None:
    """Subcommands live beside their agents; imported here so `dia --help` lists them."""
    from dia_assets.cli_ask import ask
    from dia_assets.cli_catalog import catalog_app
    from dia_assets.cli_doctor import doctor
    from dia_assets.cli_eval import eval as eval_command
    from dia_assets.cli_lineage import lineage
    from dia_assets.cli_mcp import mcp
    from dia_assets.cli_memory import memory_app

    app.command("ask")(ask)
    app.command("doctor")(doctor)
    app.command("eval")(eval_command)
    app.command("mcp")(mcp)
    app.command("lineage")(lineage)
    app.add_typer(memory_app, name="memory", help="Shared memory: import, list, show, search, export, forget.")
    app.add_typer(catalog_app, name="catalog", help="Semantic catalog: build, search.")


def _echo(message: str) -> None:
    typer.echo(message, err=True)


@app.command()
def interpret(
    data_dir: Annotated[Path, typer.Argument(help="Folder of raw CSV/JSON/Excel/Parquet files.")],
    json_out: Annotated[Path | None, typer.Option("--json", help="Write interpretation.json here.")] = None,
    md_out: Annotated[Path | None, typer.Option("--md", help="Write the review document here.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress output.")] = False,
) -> None:
    """Profile every source in DATA_DIR and write the interpretation."""
    from dia_assets.agents.interpreter.render import summary
    from dia_assets.agents.interpreter.run import interpret_to_files
    from dia_assets.agents.schema_creator.build import expert_files

    if not data_dir.is_dir():
        _echo(f"error: {data_dir} is not a folder")
        raise typer.Exit(2)
    workspace = workspace_root()
    json_path = json_out or workspace / "interpretation.json"
    md_path = md_out or (json_path.with_suffix(".md") if json_out else workspace / "interpretation.md")
    complete, model = _llm()
    interp = interpret_to_files(
        data_dir, json_path, md_path, complete=complete, model=model,
        progress=(lambda m: None) if quiet else _echo, decisions=expert_files(workspace),
    )
    typer.echo(summary(interp))
    typer.echo(f"wrote {json_path} and {md_path}")


def _llm():  # noqa: ANN202
    from resources import LLMResource

    llm = LLMResource()
    if not llm.enabled:
        return None, None
    return (lambda messages: llm.complete(messages)[0]), llm.model


@app.command()
def build(
    data_dir: Annotated[Path, typer.Argument(help="Folder of raw files.")],
    warehouse: Annotated[str | None, typer.Option(help="DuckDB file or postgresql:// URL.")] = None,
    overrides: Annotated[Path | None, typer.Option(help="Seed review/interpretation_overrides.yaml from this file if absent.")] = None,
    replace_anyway: Annotated[bool, typer.Option(help="Install the new warehouse even when it is not accepted.")] = False,
    incremental: Annotated[bool, typer.Option(
        "--incremental/--full",
        help="Re-interpret and reload only the files that changed since the installed build (default), "
        "or rebuild everything.")] = True,
    wait: Annotated[float, typer.Option(
        help="Seconds to wait while another process writes the workspace (default: fail at once, naming it).")] = 0.0,
) -> None:
    """Interpret DATA_DIR, plan the schema, load the warehouse, validate it; print the report.

    The new warehouse replaces the old one only when it is accepted (or with --replace-anyway).
    A build that fails prints one line naming the cause and leaves the state STALE (`dia status`)."""
    from dia_assets.agents.schema_creator.build import build as build_warehouse
    from dia_assets.agents.schema_creator.build import summary

    if not data_dir.is_dir():
        _echo(f"error: {data_dir} is not a folder")
        raise typer.Exit(2)
    workspace = workspace_root()
    try:
        report = build_warehouse(data_dir, workspace, warehouse=warehouse, overrides_seed=overrides,
                                 replace_anyway=replace_anyway, incremental=incremental,
                                 command=f"dia build {data_dir}", wait_s=wait, say=_echo)
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - one line, never a traceback
        _echo(f"dia build: {_failure(exc, workspace)}")
        raise typer.Exit(130 if isinstance(exc, KeyboardInterrupt) else 1) from None
    typer.echo(summary(report))
    typer.echo(f"report: {workspace / 'validation' / 'report.md'}")
    raise typer.Exit(0 if report.accepted else 1)


def _failure(exc: BaseException, workspace: Path) -> str:
    """`failed: <cause>; warehouse in place: <which>` (the traceback is in state/last_error.txt)."""
    from dia_assets.agents.schema_creator.failures import one_line
    from dia_assets.agents.schema_creator.state import read_state
    from dia_assets.agents.schema_creator.writer_lock import WorkspaceBusy

    if isinstance(exc, WorkspaceBusy):
        return f"not started: {exc}"
    cause = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"failed: {one_line(exc)}"
    try:
        installed = read_state(workspace).installed
    except Exception:  # noqa: BLE001 - the state is a courtesy here
        installed = "unknown"
    return f"{cause}; warehouse in place: {installed} (details: {workspace / 'state' / 'last_error.txt'})"


@app.command()
def demo(
    data_dir: Annotated[Path, typer.Option(help="Raw files.")] = Path("examples/data"),
    workspace: Annotated[Path, typer.Option(help="Artifact root.")] = Path("dia_workspace"),
) -> None:
    """Materialize every asset on the bundled example data and print a summary."""
    os.environ["DIA_DATA_DIR"] = str(data_dir)
    os.environ["DIA_WORKSPACE"] = str(workspace)
    from dia_assets.demo import run_demo

    sys.exit(run_demo(data_dir, workspace, _echo))


@app.command()
def ui(args: Annotated[list[str] | None, typer.Argument(help="Extra `dagster dev` arguments.")] = None) -> None:
    """`dagster dev -w workspace.yaml` that stops cleanly on Ctrl-C (children and embedded PostgreSQL)."""
    from dia_assets.devserver import run as run_ui

    sys.exit(run_ui(args or []))


@app.command()
def status(workspace: Annotated[Path | None, typer.Option(help="Artifact root (default DIA_WORKSPACE).")] = None) -> None:
    """The warehouse in place and the last build attempt: accepted (exit 0), or STALE, failed,
    not accepted or never built (exit 1, said in the first line)."""
    from dia_assets.agents.schema_creator.build import summary
    from dia_assets.agents.schema_creator.state import read_state

    state = read_state(workspace or workspace_root())
    typer.echo(f"dia status: {state.headline}")
    if state.report is not None:
        typer.echo(summary(state.report))
    raise typer.Exit(0 if state.ok else 1)


_mount()

if __name__ == "__main__":
    app()
