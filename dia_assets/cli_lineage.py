"""`dia lineage TABLE[.COLUMN]` / `dia lineage --question ID`: which answers read this, and
where a value came from (file, row range, parse). Mounted in dia_assets/cli.py."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from dia_assets.agents.locations import default_warehouse, workspace_root


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(2)


def lineage(
    target: Annotated[str | None, typer.Argument(help="TABLE or TABLE.COLUMN of the warehouse.")] = None,
    question: Annotated[str | None, typer.Option("--question", "-q", help="A saved answer's id (queries/<id>).")] = None,
    value: Annotated[str | None, typer.Option(help="With TABLE.COLUMN: the file rows this value came from.")] = None,
    workspace: Annotated[Path | None, typer.Option(help="Artifact root (default DIA_WORKSPACE).")] = None,
    warehouse: Annotated[str | None, typer.Option(help="DuckDB file or postgresql:// URL (default DIA_WAREHOUSE).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the lineage contract as JSON.")] = False,
) -> None:
    """Which saved answers read TABLE[.COLUMN] and where its values come from; or, with
    --question, where the values an answer read came from. Without arguments: everything."""
    from dia_assets.agents.lineage import render
    from dia_assets.agents.lineage.index import (
        LineageError,
        build_index,
        value_origin,
        workspace_manifest,
    )

    ws = workspace or workspace_root()
    wh = warehouse or default_warehouse(ws)
    if target and question:
        _fail("give TABLE[.COLUMN] or --question, not both")
    if value is not None and (not target or "." not in target):
        _fail("--value needs TABLE.COLUMN")
    try:
        index = build_index(ws, wh)
        if question:
            answer = next((a for a in index.answers if a.question_id == question), None)
            if answer is None:
                known = ", ".join(a.question_id for a in index.answers) or "none"
                _fail(f"no saved answer {question!r} under {ws / 'queries'} (saved: {known})")
            typer.echo(answer.model_dump_json(indent=2) if as_json else render.question_report(index, answer))
            return
        if not target:
            typer.echo(index.to_json() if as_json else render.index_report(index))
            return
        table, _, column = target.partition(".")
        origin = index.table(table)
        if origin is None:
            _fail(f"no table {table!r} in the installed build (tables: {', '.join(t.table for t in index.tables)})")
        if column and origin.column(column) is None:
            _fail(f"{origin.table} has no column {column!r} (columns: {', '.join(c.column for c in origin.columns)})")
        if value is not None:
            found = value_origin(workspace_manifest(ws), wh, origin.table, origin.column(column).column, value)
            typer.echo(found.model_dump_json(indent=2) if as_json else render.value_report(found))
            return
        if as_json:
            typer.echo(origin.model_dump_json(indent=2))
            for a in index.readers(origin.table, column or None):
                typer.echo(a.model_dump_json(indent=2))
            return
        typer.echo(render.column_report(index, origin.table, origin.column(column).column if column else None))
    except LineageError as exc:
        _fail(str(exc))
