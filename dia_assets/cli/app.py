"""`dia`: the command line over the same core the Dagster assets call.

Flags mean one thing everywhere and exit codes are 0 ok, 1 failed, 2 usage (docs/cli.md)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

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
from dia_assets.cli.errors import DiaGroup
from dia_assets.platform.workspace import Workspace

app = typer.Typer(help="DIA: raw enterprise files to a validated, queryable database.", no_args_is_help=True,
                  cls=DiaGroup)


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"dia {version('dia')}")
        except PackageNotFoundError:
            typer.echo("dia (not installed: no package metadata)")
        raise typer.Exit(0)


@app.callback()
def main(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
) -> None:
    """DIA: raw enterprise files to a validated, queryable database.

    Exit codes: 0 ok, 1 a failed check or operation (not found included), 2 usage error."""


def _mount() -> None:
    """Subcommands live beside their agents; imported here so `dia --help` lists them."""
    from dia_assets.cli.ask import ask
    from dia_assets.cli.catalog import catalog_app
    from dia_assets.cli.chart import chart
    from dia_assets.cli.config import config
    from dia_assets.cli.dbt import dbt_app
    from dia_assets.cli.doctor import doctor
    from dia_assets.cli.eval import eval as eval_command
    from dia_assets.cli.lineage import lineage
    from dia_assets.cli.mcp import mcp
    from dia_assets.cli.memory import memory_app

    app.command("ask")(ask)
    app.command("chart")(chart)
    app.command("doctor")(doctor)
    app.command("eval")(eval_command)
    app.command("mcp")(mcp)
    app.command("lineage")(lineage)
    app.command("config")(config)
    app.add_typer(memory_app, name="memory", help="Shared memory: import, list, show, search, export, forget.")
    app.add_typer(catalog_app, name="catalog", help="Semantic catalog: build, search.")
    app.add_typer(dbt_app, name="dbt", help="dbt: export the built warehouse as a dbt project.")


def _echo(message: str) -> None:
    typer.echo(message, err=True)


@app.command()
def interpret(
    data_dir: Annotated[Path, typer.Argument(help="Folder of raw CSV/JSON/Excel/Parquet files.")],
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write interpretation.json here (default <workspace>/interpretation.json).")] = None,
    md_out: Annotated[Path | None, typer.Option(
        "--md", help="Write the review document here (default beside the JSON, .md).")] = None,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Profile every source in DATA_DIR and write the interpretation (JSON and a review document)."""
    from dia_assets.agents.interpreter.render import summary
    from dia_assets.agents.interpreter.run import interpret_to_files
    from dia_assets.agents.schema_creator.build import expert_files

    if not data_dir.is_dir():
        fail(f"{data_dir} is not a folder", "pass the folder that holds the raw files", EXIT_USAGE)
    ws = use_workspace(workspace)
    json_path = output or Workspace(ws).interpretation
    md_path = md_out or (json_path.with_suffix(".md") if output else Workspace(ws).interpretation_md)
    complete, model = _llm()
    interp = interpret_to_files(
        data_dir, json_path, md_path, complete=complete, model=model,
        progress=say(quiet), decisions=expert_files(ws),
    )
    if as_json:
        typer.echo(json_path.read_text(encoding="utf-8"))
        say(quiet)(f"wrote {json_path} and {md_path}")
        return
    typer.echo(summary(interp))
    typer.echo(f"wrote {json_path} and {md_path}")


def _llm():  # noqa: ANN202
    from dia_assets.platform.settings import get_settings

    if not get_settings().model:  # no model: Dagster (the resource's home, 1.5 s to import) stays unloaded
        return None, None
    from dia_assets.dagster.resources import LLMResource

    llm = LLMResource()
    if not llm.enabled:
        return None, None
    return (lambda messages: llm.complete(messages)[0]), llm.model


@app.command()
def build(
    data_dir: Annotated[str, typer.Argument(help="Folder of raw files, or an s3://bucket/prefix URL.")],
    warehouse: Annotated[str | None, typer.Option(help="DuckDB file or postgresql:// URL.")] = None,
    overrides: Annotated[Path | None, typer.Option(help="Seed review/interpretation_overrides.yaml from this file if absent.")] = None,
    replace_anyway: Annotated[bool, typer.Option(help="Install the new warehouse even when it is not accepted.")] = False,
    incremental: Annotated[bool, typer.Option(
        "--incremental/--full",
        help="Re-interpret and reload only the files that changed since the installed build (default), "
        "or rebuild everything.")] = True,
    wait: Annotated[float, typer.Option(
        help="Seconds to wait while another process writes the workspace (default: fail at once, naming it).")] = 0.0,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Interpret DATA_DIR, plan the schema, load the warehouse, validate it; print the report.

    The new warehouse replaces the old one only when it is accepted (or with --replace-anyway).
    Exit 0 accepted, 1 not accepted or failed (one line naming the cause; `dia status` says STALE)."""
    from dia_assets.agents.schema_creator.build import summary
    from dia_assets.pipeline import build as build_warehouse
    from dia_assets.platform.files.object_store import is_url

    if not is_url(data_dir) and not Path(data_dir).is_dir():
        fail(f"{data_dir} is not a folder", "pass the folder that holds the raw files", EXIT_USAGE)
    ws = use_workspace(workspace)
    try:
        report = build_warehouse(data_dir, ws, warehouse=warehouse, overrides_seed=overrides,
                                 replace_anyway=replace_anyway, incremental=incremental,
                                 command=f"dia build {data_dir}", wait_s=wait, say=say(quiet))
    except (Exception, KeyboardInterrupt) as exc:  # noqa: BLE001 - one line, never a traceback
        _echo(f"error: dia build: {_failure(exc, ws)}")
        raise typer.Exit(130 if isinstance(exc, KeyboardInterrupt) else 1) from None
    if as_json:
        echo_json(report.model_dump(mode="json"))
    else:
        typer.echo(summary(report))
        typer.echo(f"report: {Workspace(ws).report_md if not is_url(ws) else str(ws).rstrip('/') + '/validation/report.md'}")
    raise typer.Exit(0 if report.accepted else 1)


def _failure(exc: BaseException, workspace: Path | str) -> str:
    """`failed: <cause>; warehouse in place: <which>` (the traceback is in state/last_error.txt)."""
    from dia_assets.agents.schema_creator.failures import one_line
    from dia_assets.agents.schema_creator.state import read_state
    from dia_assets.agents.schema_creator.writer_lock import WorkspaceBusy
    from dia_assets.platform.files.object_store import ObjectStoreError, is_url

    if isinstance(exc, WorkspaceBusy):
        return f"not started: {exc}"
    if isinstance(exc, ObjectStoreError) or is_url(workspace):
        return f"failed: {exc if isinstance(exc, ObjectStoreError) else one_line(exc)}"  # names the URL
    cause = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"failed: {one_line(exc)}"
    try:
        installed = read_state(workspace).installed
    except Exception:  # noqa: BLE001 - the state is a courtesy here
        installed = "unknown"
    return f"{cause}; warehouse in place: {installed} (details: {workspace / 'state' / 'last_error.txt'})"


@app.command()
def demo(
    data_dir: Annotated[Path | None, typer.Option(
        help="Raw files (default DIA_DATA_DIR, else examples/data). Its questions.yaml and overrides.yaml, "
        "if any, are its questions and expert corrections.")] = None,
    workspace: WorkspaceOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Materialize every asset on a data folder (the bundled example by default) and print a summary."""
    from dia_assets.platform.settings import get_settings

    data_dir = data_dir or get_settings().data_dir
    os.environ["DIA_DATA_DIR"] = str(data_dir)
    ws = use_workspace(workspace)
    from dia_assets.cli.demo import run_demo

    sys.exit(run_demo(data_dir, ws, say(quiet)))


@app.command(context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def ui(
    ctx: typer.Context,
    port: Annotated[int | None, typer.Option("--port", "-p", help="Port of the Dagster UI (dagster's default 3000).")] = None,
    host: Annotated[str | None, typer.Option("--host", help="Address of the Dagster UI (dagster's default 127.0.0.1).")] = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """`dg dev` (or `dagster dev -w workspace.yaml` without dagster-dg-cli) that stops cleanly on
    Ctrl-C (children and embedded PostgreSQL).

    Arguments after the options (or after `--`) go to `dg dev` unchanged."""
    from dia_assets.dagster.devserver import run as run_ui
    from dia_assets.dagster.instance import use_persistent_instance

    ws = use_workspace(workspace)  # the child inherits DIA_WORKSPACE
    home = use_persistent_instance(ws)  # and DAGSTER_HOME: runs outlive the session
    typer.echo(f"Dagster instance: {home}", err=True)
    sys.exit(run_ui(dev_args(port, host, list(ctx.args))))


def dev_args(port: int | None, host: str | None, extra: list[str]) -> list[str]:
    """The `dg dev` / `dagster dev` arguments for `dia ui`'s options (both take -p and -h)."""
    return [*(["-p", str(port)] if port else []), *(["-h", host] if host else []), *extra]


@app.command()
def status(workspace: WorkspaceOpt = None, as_json: JsonOpt = False) -> None:
    """The warehouse in place and the last build attempt: accepted (exit 0), or STALE, failed,
    not accepted or never built (exit 1, said in the first line)."""
    from dia_assets.agents.schema_creator.build import summary
    from dia_assets.agents.schema_creator.state import read_state

    state = read_state(use_workspace(workspace))
    if as_json:
        echo_json({"verdict": state.verdict, "ok": state.ok, "headline": state.headline,
                   "installed": state.installed,
                   "report": state.report.model_dump(mode="json") if state.report else None,
                   "attempt": state.attempt.model_dump(mode="json") if state.attempt else None})
    else:
        typer.echo(f"dia status: {state.headline}")
        if state.report is not None:
            typer.echo(summary(state.report))
    raise typer.Exit(0 if state.ok else 1)


_mount()

if __name__ == "__main__":
    app()
