"""Options and helpers every `dia` command shares, so a flag means one thing everywhere
(docs/cli.md): `-w/--workspace`, `-q/--quiet`, `--json` (stdout), `-o/--output` (a file)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from dia_assets.agents.locations import workspace_root

# Exit codes (README "CLI", docs/cli.md): 0 ok, 1 a failed check or operation, 2 usage.
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

# text, not a Path: `-w s3://bucket/prefix` (Path would fold the //); the settings type it
WorkspaceOpt = Annotated[str | None, typer.Option(
    "--workspace", "-w", help="Artifact root (default $DIA_WORKSPACE, else ./dia_workspace).")]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="No progress or notes on stderr (errors still print).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as one JSON document on stdout.")]


def use_workspace(path: str | Path | None) -> Path:
    """The workspace for this command. `-w` sets DIA_WORKSPACE so every layer below (memory's
    pgdata, the warehouse default, the MCP server) agrees; the root app restores it afterwards."""
    if path is not None:
        os.environ["DIA_WORKSPACE"] = str(path)
    return workspace_root()


def fail(message: str, fix: str | None = None, code: int = EXIT_FAILED) -> NoReturn:
    """One line on stderr, `error: <what>[; <fix>]`, then exit (1 failed, 2 usage)."""
    typer.echo(one_line(f"error: {message}" + (f"; {fix}" if fix else "")), err=True)
    raise typer.Exit(code)


def one_line(text: str) -> str:
    """Collapse whitespace so a message from below stays on one line."""
    return " ".join(str(text).split())


def echo_json(payload: Any) -> None:
    """`--json`: one JSON document on stdout, nothing else there."""
    typer.echo(json.dumps(payload, indent=2, default=str))


def say(quiet: bool):  # noqa: ANN201 - Callable[[str], None]
    """Progress and notes go to stderr unless quiet (stdout is for results)."""
    return (lambda message: None) if quiet else (lambda message: typer.echo(message, err=True))
