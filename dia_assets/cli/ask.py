"""`dia ask "QUESTION"`: answer one question on the terminal with the Query Generator.

Mount with `app.command()(ask)` in dia_assets/cli/app.py. The agent may ask a clarification
question on the terminal; answers are kept for the session (`queries/_session.json`) as
short-term memory, and become preference lessons in shared memory when they led to a
verified answer. `--follow-up` builds on the previous accepted SQL (context carryover).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from dia_assets.agents.locations import default_warehouse
from dia_assets.cli.common import (
    EXIT_USAGE,
    JsonOpt,
    QuietOpt,
    WorkspaceOpt,
    fail,
    say,
    use_workspace,
)
from dia_assets.contracts.query_result import Verification
from dia_assets.platform.settings import get_settings
from dia_assets.platform.warehouse.base import target_dialect
from dia_assets.platform.workspace import Workspace


def _catalog_link(target: str, store: object) -> object:
    from dia_assets.cli.analysis import catalog_link_for

    return None if store is None or not target_dialect(target).file_based else catalog_link_for(target, store)


def ask(
    question: Annotated[str, typer.Argument(help="The question, in plain language.")],
    warehouse: Annotated[str | None, typer.Option(
        "--warehouse",
        help="DuckDB file (default DIA_WAREHOUSE or <workspace>/warehouse.duckdb), SQLite file or postgresql:// URL.",
    )] = None,
    question_id: Annotated[str | None, typer.Option("--id", help="Artifact folder name under queries/.")] = None,
    follow_up: Annotated[bool, typer.Option("--follow-up", help="Build on the previous accepted answer.")] = False,
    allow_writes: Annotated[bool, typer.Option(
        "--allow-writes", help="Apply a verified modification (DDL/DML) to the warehouse.")] = False,
    memory: Annotated[bool, typer.Option("--memory/--no-memory", help="Use the shared memory store.")] = True,
    interactive: Annotated[bool, typer.Option(
        "--interactive/--no-interactive", help="Let the agent ask clarification questions here.")] = True,
    model: Annotated[str | None, typer.Option("--model", help="litellm model (default DIA_MODEL).")] = None,
    as_json: JsonOpt = False,
    to: Annotated[list[str] | None, typer.Option(
        "--to", help="Also print the SQL transpiled to this dialect (snowflake, bigquery, postgres, sqlite, ...).")] = None,
    pipeline: Annotated[bool | None, typer.Option(
        "--pipeline/--no-pipeline", help="By default the agent decides whether the question needs a SQL + "
        "semantic-operator pipeline (sem_filter, sem_extract, sem_group, sem_join; DuckDB warehouse and "
        "DIA_PRIVACY=samples); --pipeline fails when they are not usable, --no-pipeline keeps to SQL. "
        "Pipeline artifacts go to analysis/<id>/.")] = None,
    workspace_dir: WorkspaceOpt = None,
    quiet: QuietOpt = False,
) -> None:
    """Answer QUESTION with verified SQL against the warehouse."""
    from dia_assets.agents.query.run import checked_question_id
    from dia_assets.platform.model.errors import NO_MODEL_MESSAGE

    if question_id is not None:
        try:
            checked_question_id(question_id)
        except ValueError as exc:
            fail(f"--id: {exc}", "use a plain folder name (letters, digits, - and _)", EXIT_USAGE)
    model = model or get_settings().model
    if not model:
        fail(NO_MODEL_MESSAGE, code=EXIT_USAGE)
    workspace = use_workspace(workspace_dir)
    _echo = say(quiet)
    target = warehouse or default_warehouse(workspace)
    engine = target_dialect(target)
    if engine.file_based and not engine.local_path(str(target)).exists():
        fail(f"no warehouse at {target}", "build it first (`dia build DIR` or `make demo`) or pass --warehouse",
             EXIT_USAGE)

    from dia_assets.agents.query.memory import open_store_memory
    from dia_assets.agents.query.policies import PreviousAnswer
    from dia_assets.agents.query.run import markdown_table
    from dia_assets.contracts.query_result import Clarification
    from dia_assets.platform.model.litellm import litellm_chat

    session_path = Workspace(workspace).session
    session = json.loads(session_path.read_text()) if session_path.exists() else {}
    previous = None
    if follow_up:
        if not session.get("sql"):
            _echo("note: no previous accepted answer in this session; answering from scratch")
        else:
            previous = PreviousAnswer(session["question"], session["sql"])
    known = [Clarification(**c) for c in session.get("clarifications", [])]

    store = None
    if memory:
        store = open_store_memory(target, str(workspace))
        if store is None:
            _echo("note: shared memory unavailable; answering without it (--no-memory to silence)")

    def ask_user(q: str) -> str | None:
        typer.echo(f"\nThe agent asks: {q}", err=True)  # stdout stays the result (--json)
        answer = typer.prompt("Your answer (empty to skip)", default="", show_default=False, err=True)
        return answer.strip() or None

    from dia_assets.agents.analysis.auto import answer
    from dia_assets.agents.analysis.steps import PipelineError
    from dia_assets.cli.analysis import catalog_for

    try:
        result, _, analysis = answer(
            question, target, pipelines=pipeline, model=model, question_id=question_id, chat=litellm_chat(model),
            memory=store, manifest_path=Workspace(workspace).manifest, workspace=workspace,
            ask_user=ask_user if interactive else None, allow_writes=allow_writes,
            previous=previous, clarifications=known, catalog_link=_catalog_link(target, store),
            catalog=None if store is None or not target_dialect(target).file_based else catalog_for(target, store),
        )
    except PipelineError as err:
        fail(str(err), code=EXIT_USAGE)
    if result.status == "answered":
        session = {
            "question": question, "sql": result.sql,
            "clarifications": [c.model_dump() for c in [*known, *result.clarifications] if c.answer],
        }
        session_path.parent.mkdir(parents=True, exist_ok=True)
        session_path.write_text(json.dumps(session, indent=2))
    for warning in result.warnings:  # e.g. "lesson not recorded": the answer stands
        _echo(f"warning: {warning}")
    if as_json:
        typer.echo(result.to_json())
    else:
        typer.echo(f"status: {result.status} ({result.message})")
        if result.sql:
            typer.echo(f"\n{result.sql}\n")
            from dia_assets.agents.query.dialects import transpile

            for dialect in to or []:
                typer.echo(f"-- {dialect}:\n{transpile(result.sql, result.dialect, dialect)}\n")
        if result.preview:
            typer.echo(markdown_table(result.columns, result.preview))
            if result.row_count > len(result.preview):
                typer.echo(f"... {result.row_count} rows in all")
        if result.answer:
            typer.echo(f"\n{result.answer}")
        if result.modification:
            typer.echo(f"modification: {result.modification.detail}")
        typer.echo("\n" + verification_line(result.verification))
        typer.echo(f"attempts {result.attempts}; tokens {result.tokens.total_tokens}; "
                   f"cost USD {result.tokens.cost_usd:.4f}; {result.latency_s:.1f} s")
        if result.chart is not None:
            where = f" ({result.chart.files['png']})" if "png" in result.chart.files else ""
            typer.echo(f"chart: {result.chart.kind.replace('_', ' ')}{where}: {result.chart.reason}")
        if analysis is not None:
            from dia_assets.cli.analysis import pipeline_lines

            for line in pipeline_lines(analysis):
                typer.echo(line)
        if "answer" in result.artifacts:
            typer.echo(f"artifacts: {Path(result.artifacts['answer']).parent}")
    if result.status == "failed":
        fail(result.message)  # one line a person can act on, no traceback


def verification_line(verification: Verification) -> str:
    """"passed" covers the checks only: semantic decisions they did not check are named
    with their estimated precision (or as unverified)."""
    failed = verification.failed()
    if not verification.passed:
        return "verification: FAILED" + (f" ({', '.join(c.name for c in failed)})" if failed else "")
    if verification.unverified:
        return ("verification: SQL checks passed; NOT verified: " + "; ".join(verification.unverified))
    return "verification: passed"
