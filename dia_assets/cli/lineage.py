"""`dia lineage TABLE[.COLUMN]` / `dia lineage --question ID`: which answers read this, and
where a value came from (file, row range, parse). Mounted in dia_assets/cli/app.py."""

from __future__ import annotations

from typing import Annotated

import typer

from dia_assets.agents.locations import default_warehouse
from dia_assets.cli.common import EXIT_USAGE, JsonOpt, WorkspaceOpt, echo_json, fail, use_workspace
from dia_assets.platform.workspace import Workspace


def lineage(
    target: Annotated[str | None, typer.Argument(help="TABLE or TABLE.COLUMN of the warehouse.")] = None,
    question: Annotated[str | None, typer.Option("--question", help="A saved answer's id (queries/<id>).")] = None,
    value: Annotated[str | None, typer.Option(help="With TABLE.COLUMN: the file rows this value came from.")] = None,
    workspace: WorkspaceOpt = None,
    warehouse: Annotated[str | None, typer.Option(help="DuckDB file or postgresql:// URL (default DIA_WAREHOUSE).")] = None,
    as_json: JsonOpt = False,
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

    ws = use_workspace(workspace)
    wh = warehouse or default_warehouse(ws)
    if target and question:
        fail("give TABLE[.COLUMN] or --question, not both", code=EXIT_USAGE)
    if value is not None and (not target or "." not in target):
        fail("--value needs TABLE.COLUMN", code=EXIT_USAGE)
    try:
        index = build_index(ws, wh)
        if question:
            answer = next((a for a in index.answers if a.question_id == question), None)
            if answer is None:
                known = ", ".join(a.question_id for a in index.answers) or "none"
                fail(f"no saved answer {question!r} under {Workspace(ws).queries_dir} (saved: {known})",
                     "pass one of the saved ids, or answer it first with `dia ask --id ID`")
            typer.echo(answer.model_dump_json(indent=2) if as_json else render.question_report(index, answer))
            return
        if not target:
            typer.echo(index.to_json() if as_json else render.index_report(index))
            return
        table, _, column = target.partition(".")
        origin = index.table(table)
        if origin is None:
            fail(f"no table {table!r} in the installed build (tables: {', '.join(t.table for t in index.tables)})",
                 "name one of those tables")
        if column and origin.column(column) is None:
            fail(f"{origin.table} has no column {column!r} (columns: {', '.join(c.column for c in origin.columns)})",
                 "name one of those columns")
        if value is not None:
            try:
                found = value_origin(workspace_manifest(ws), wh, origin.table, origin.column(column).column, value)
            except LineageError as exc:  # --value is not a value of the column's type: usage
                fail(str(exc), code=EXIT_USAGE)
            typer.echo(found.model_dump_json(indent=2) if as_json else render.value_report(found))
            return
        if as_json:  # one document: the table's origin and the answers that read it
            echo_json({"origin": origin.model_dump(mode="json"),
                       "readers": [a.model_dump(mode="json") for a in index.readers(origin.table, column or None)]})
            return
        typer.echo(render.column_report(index, origin.table, origin.column(column).column if column else None))
    except LineageError as exc:
        fail(str(exc))  # its message names the step to run
