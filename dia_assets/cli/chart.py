"""`dia chart QUESTION_ID [-o FILE]`: chart a stored answer by the rules, without a model.
Mounted in dia_assets/cli/app.py."""

from __future__ import annotations

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

SUFFIXES = (".png", ".svg", ".html", ".json")


def chart(
    question_id: Annotated[str, typer.Argument(help="A saved answer's id (queries/<id>/, from `dia ask` or Dagster).")],
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write one file (.png, .svg, .html or .json: the Vega-Lite spec) instead of "
                               "replacing chart.png/.svg/.json in the answer's folder.")] = None,
    workspace: WorkspaceOpt = None,
    quiet: QuietOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Chart a stored answer from its saved rows (result.parquet) by the rules: no model call,
    no warehouse needed. Prints the chart kind, why, and where it was written."""
    from dia_assets.agents.query import StoredAnswerError, chart_stored

    if output is not None and output.suffix.lower() not in SUFFIXES:
        fail(f"unknown chart file type {output.suffix or '(none)'!r}", f"name a {', '.join(SUFFIXES)} file",
             code=EXIT_USAGE)
    ws = use_workspace(workspace)
    try:
        spec = chart_stored(ws, question_id, output)
    except ValueError as err:  # a question id that is no plain name, or no chart to draw
        code = EXIT_USAGE if "question id" in str(err) else 1
        fail(str(err), None if code == EXIT_USAGE else "the result has no shape a chart fits; read it in answer.md",
             code=code)
    except StoredAnswerError as err:
        fail(str(err), "answer it first with `dia ask --id ID` (or materialize its query_result partition)")
    if as_json:
        echo_json(spec.model_dump(mode="json"))
        return
    where = ", ".join(spec.files.values()) or "nothing drawn (a table fits best)"
    typer.echo(f"chart: {spec.kind.replace('_', ' ')}: {spec.reason}")
    say(quiet)(f"written: {where}")
