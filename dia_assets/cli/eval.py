"""`dia eval QUESTIONS --db ... [--model ...] [--workers N] [-o DIR]`: score the Query
Generator on a question set (ours, BIRD, Spider, defog sql-eval); with `--predictions FILE`,
score SQL another system produced instead (no model). Mount with
`app.command("eval")(eval)`; imports are lazy so `dia --help` stays fast."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated, Any

import typer

from dia_assets.agents.locations import default_warehouse, workspace_root
from dia_assets.cli.common import (
    EXIT_USAGE,
    JsonOpt,
    QuietOpt,
    WorkspaceOpt,
    echo_json,
    fail,
    use_workspace,
)
from dia_assets.platform.settings import get_settings

ORACLE_HELP = (
    "litellm model name (default $DIA_MODEL). `oracle` answers every question with its gold SQL "
    "through the full agent path (a plumbing check that must score 100% EX); `oracle-direct` "
    "skips the agent."
)


def _err(message: str) -> None:
    typer.echo(message, err=True)


def _default_db(questions: Path, fmt: str) -> str | None:
    from dia_assets.agents.evaluation.datasets import default_db

    try:
        found = default_db(questions, fmt)
    except ValueError:
        found = None
    if found:
        return str(found)
    warehouse = Path(default_warehouse())
    return str(warehouse) if warehouse.exists() else None


def _no_model_message() -> str:
    try:
        from dia_assets.platform.model.errors import NO_MODEL_MESSAGE
    except Exception:  # the Query Generator is optional for this message
        NO_MODEL_MESSAGE = "No model is configured: set DIA_MODEL to a litellm model name and its API key."  # noqa: N806
    return (f"{NO_MODEL_MESSAGE} To check the evaluation plumbing without a model, run with "
            "`--model oracle` (gold SQL through the agent) or `--model oracle-direct`.")


def _progress(quiet: bool) -> tuple[Any, Any]:
    """A rich progress bar on stderr (or nothing when quiet): (callback, context)."""
    if quiet:
        from contextlib import nullcontext

        return (lambda done, total, record: None), nullcontext()
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    progress = Progress(TextColumn("eval"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[score]}"),
                        TimeElapsedColumn(), console=Console(stderr=True))
    task = progress.add_task("eval", total=None, score="")
    state = {"correct": 0, "scored": 0}

    def update(done: int, total: int, record: Any) -> None:
        if record is not None and record.status != "broken":
            state["scored"] += 1
            state["correct"] += record.ex
        score = f"EX {100 * state['correct'] / state['scored']:.1f}% (this session)" if state["scored"] else ""
        progress.update(task, total=total, completed=done, score=score)

    return update, progress


def _memory_factory() -> Any:
    """One shared-memory adapter per database, opened on first use."""
    from dia_assets.agents.query.memory import open_store_memory

    opened: dict[str, Any] = {}

    def factory(db: Any) -> Any:
        if db.target not in opened:
            opened[db.target] = open_store_memory(db.target, str(workspace_root()))
            if opened[db.target] is None:
                _err(f"warning: the memory store could not be opened; {db.target} runs without memory")
        return opened[db.target]

    return factory


def _is_bird(questions: Path, fmt: str) -> bool:
    if fmt != "auto":
        return fmt == "bird"
    from dia_assets.agents.evaluation.datasets import detect_format

    try:
        return detect_format(questions) == "bird"
    except (OSError, ValueError):
        return False


def eval(  # noqa: A001 - the command is `dia eval`
    questions: Annotated[Path, typer.Argument(help="Question set: our JSONL, BIRD/Spider dev.json or a defog sql-eval CSV; with `--tasks spider2-dbt`, Spider2-DBT's spider2-dbt.jsonl or its folder.")],
    tasks: Annotated[str, typer.Option("--tasks", help=(
        "sql (questions answered with SQL) or spider2-dbt (dbt projects completed by the agent, scored "
        "with Spider2-DBT's duckdb_match); auto: spider2-dbt when QUESTIONS holds spider2-dbt.jsonl."))] = "auto",
    gold: Annotated[Path | None, typer.Option("--gold", help=(
        "spider2-dbt: the evaluation_suite/gold folder (default: beside examples/)."))] = None,
    db: Annotated[str | None, typer.Option("--db", help=(
        "Database(s): a SQLite/DuckDB file, a folder of per-db files (BIRD dev_databases/, Spider database/), "
        "or a postgresql:// URL ({db} is replaced by each question's db id). Default: the benchmark's own "
        "folder next to QUESTIONS, else $DIA_WORKSPACE/warehouse.duckdb."))] = None,
    model: Annotated[str | None, typer.Option("--model", help=ORACLE_HELP)] = None,
    workers: Annotated[int, typer.Option("--workers", "-j", min=1, help="Instances scored in parallel.")] = 4,
    out: Annotated[Path | None, typer.Option("--output", "-o", "--out", help="Output folder (default <workspace>/eval); instances already scored there are skipped. `--out` is the old spelling.")] = None,
    fmt: Annotated[str, typer.Option("--format", help="auto, bird, spider, defog or jsonl.")] = "auto",
    limit: Annotated[int | None, typer.Option("--limit", help="Only the first N instances.")] = None,
    gold_dialect: Annotated[str | None, typer.Option("--gold-dialect", help="Dialect of the gold SQL when the format's default is wrong (e.g. BIRD mini-dev's postgres or mysql files).")] = None,
    timeout: Annotated[float, typer.Option("--timeout", help="Seconds per SQL execution (gold and predicted).")] = 30.0,
    ves_iterations: Annotated[int | None, typer.Option("--ves-iterations", help="Timing runs per correct instance for VES (0 skips VES). Default 100 for BIRD-format runs (BIRD's own; its 3-sigma outlier filter needs more than 10), else 10.")] = None,
    decimals: Annotated[int | None, typer.Option("--decimals", help="Default decimal precision for comparisons (per-instance values win).")] = None,
    soft_f1_order: Annotated[str, typer.Option("--soft-f1-order", help="executed (BIRD mini-dev's code: rows in the order returned; the default for BIRD-format runs) or sorted (one canonical order, deterministic; the default otherwise).")] = "auto",
    score_unverified: Annotated[bool, typer.Option("--score-unverified", help="Score the agent's last submitted SQL when it accepted none.")] = False,
    memory: Annotated[bool, typer.Option("--memory", help="Give the agent the shared memory store ($DIA_MEMORY_URL or the embedded one); runs one worker.")] = False,
    traces: Annotated[bool, typer.Option("--traces", help="Write each question's agent trace to OUT/traces/<id>.json.")] = False,
    fail_under: Annotated[float | None, typer.Option("--fail-under", help="Exit 1 when EX (percent) is below this.")] = None,
    force: Annotated[bool, typer.Option("--force", help="Reuse an --out folder written by another model.")] = False,
    quiet: QuietOpt = False,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
    predictions: Annotated[Path | None, typer.Option("--predictions", help=(
        "Score this file of SQL from any system instead of running a model: BIRD's predict_dev.json, "
        "Spider's one query a line (optionally SQL<tab>db_id), or JSONL with id and sql."))] = None,
    predictions_format: Annotated[str, typer.Option("--predictions-format", help="auto, bird, spider or jsonl.")] = "auto",
    match: Annotated[str, typer.Option("--match", help=(
        "How prediction keys name questions: index (0-based position in QUESTIONS), id (the question's id, "
        "BIRD's question_id) or auto (index for bird/spider files, id for jsonl)."))] = "auto",
) -> None:
    """Run the Query Generator over QUESTIONS and score it: EX, soft-F1, VES, failure classes."""
    from dia_assets.agents.evaluation.datasets import load_instances
    from dia_assets.agents.evaluation.models import RunConfig
    from dia_assets.agents.evaluation.runner import EvalError, run_eval
    from dia_assets.agents.evaluation.solvers import AgentSolver, OracleSolver

    use_workspace(workspace)
    from dia_assets.cli.eval_dbt import eval_dbt, is_dbt_tasks

    if tasks not in ("auto", "sql", "spider2-dbt"):
        fail("--tasks is auto, sql or spider2-dbt", code=EXIT_USAGE)
    if tasks == "spider2-dbt" or (tasks == "auto" and is_dbt_tasks(questions)):
        model = model or get_settings().model
        if not model:
            fail(_no_model_message(), code=EXIT_USAGE)
        eval_dbt(questions, gold, model, out or workspace_root() / "eval", limit, quiet, as_json, fail_under)
        return
    if soft_f1_order not in ("auto", "sorted", "executed"):
        fail("--soft-f1-order is auto, sorted or executed", code=EXIT_USAGE)
    model = None if predictions else model or get_settings().model
    if not model and not predictions:
        fail(_no_model_message(), code=EXIT_USAGE)
    try:
        instances = load_instances(questions, fmt, limit, gold_dialect)
    except (OSError, ValueError, KeyError) as err:
        fail(f"cannot read {questions}: {err}", "pass a question set (JSONL, BIRD/Spider JSON or a defog CSV)",
             EXIT_USAGE)
    bird = _is_bird(questions, fmt)
    if soft_f1_order == "auto":  # BIRD runs score as mini-dev's evaluation_f1.py does
        soft_f1_order = "executed" if bird else "sorted"
    if ves_iterations is None:
        ves_iterations = 100 if bird else 10
    db = db or _default_db(questions, fmt)
    if not db:
        fail("no database: pass --db (a SQLite/DuckDB file, a folder of databases or a postgresql:// URL). "
             "For the bundled sample build the warehouse first: "
             "`dia build examples/data --overrides examples/data/overrides.yaml`.",
             code=EXIT_USAGE)
    out = out or workspace_root() / "eval"
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    if memory and workers > 1:
        _err("note: --memory runs one worker (the store's lessons depend on question order)")
        workers = 1
    from dia_assets.agents.evaluation.databases import DatabaseResolver

    execute_pred, extra, resolver = None, None, DatabaseResolver(db)
    if predictions:
        solver, execute_pred, extra = _predictions_setup(predictions, predictions_format, match, instances)
        resolver = DatabaseResolver(db, catalog_reads=True)  # BIRD's scorer reads sqlite_master
    elif model == "oracle-direct":
        solver = OracleSolver()
    else:
        assert model is not None
        solver = AgentSolver(
            model, score_unverified=score_unverified, timeout_s=timeout, trace_dir=out / "traces" if traces else None,
            memory=_memory_factory() if memory else None)
    config = RunConfig(questions=str(questions), db=str(db), solver=solver.name, model=model, workers=workers,
                       timeout_s=timeout, ves_iterations=ves_iterations, decimals=decimals,
                       soft_f1_order=soft_f1_order)  # type: ignore[arg-type]
    callback, context = _progress(quiet)
    try:
        with context:
            summary = run_eval(instances, resolver, solver, out, workers=workers, timeout_s=timeout,
                               ves_iterations=ves_iterations, decimals=decimals, progress=callback,
                               config=config, force=force, soft_f1_order=soft_f1_order,
                               execute_pred=execute_pred, summary_extra=extra)
    except EvalError as err:
        fail(str(err), code=EXIT_USAGE)
    except KeyboardInterrupt:
        fail(f"interrupted: scored instances are kept in {out}/results.jsonl", "run the same command to resume", 130)

    def pct(v: float | None) -> str:
        return "-" if v is None else f"{v:.2f}"

    if as_json:  # stdout is the summary alone; the matching counts go to stderr
        echo_json(summary)
        if predictions:
            _echo_matching(summary["predictions"], show=_err)
    else:
        _print_summary(summary, out, predictions is not None, pct)
    crashed = summary["status_counts"].get("error", 0)
    if crashed:
        _err(f"warning: the solver raised an error on {crashed} instance(s); see failure_detail in "
             f"{out / 'results.jsonl'} (they count as execution failures)")
    if fail_under is not None and (summary["ex"] or 0.0) < fail_under:
        fail(f"EX {pct(summary['ex'])}% is below --fail-under {fail_under}")


def _print_summary(summary: dict[str, Any], out: Path, predictions: bool, pct: Any) -> None:
    """The human summary on stdout (`--json` prints summary.json's content instead)."""
    typer.echo(f"EX {pct(summary['ex'])}%  soft-F1 {pct(summary['soft_f1'])}%  VES {pct(summary['ves'])} "
               f"(time-ratio VES {pct(summary.get('ves_ratio'))})  "
               f"({summary['correct']}/{summary['scored']} correct, {summary['broken']} broken)")
    if predictions:
        _echo_matching(summary["predictions"])
    lat = summary["latency_s"]
    typer.echo(f"tokens {summary['tokens_total']}, cost USD {summary['cost_usd_total']:.4f}, "
               f"latency p50 {lat['p50']} s p90 {lat['p90']} s")
    typer.echo(f"wrote {out / 'results.jsonl'}, {out / 'summary.json'} and {out / 'report.md'}")


def _predictions_setup(path: Path, fmt: str, match: str, instances: list[Any]) -> tuple[Any, Any, dict[str, Any]]:
    """The solver answering from a predictions file, the gated executor and the matching summary."""
    from dia_assets.agents.evaluation.predictions import (
        PredictionsSolver,
        match_predictions,
        read_predictions,
    )
    from dia_assets.agents.evaluation.sandbox import PredictionSandbox

    try:
        fmt, preds = read_predictions(path, fmt)
        mode, matching = match_predictions(instances, preds, fmt, match)
    except (OSError, ValueError) as err:
        fail(f"cannot read predictions {path}: {err}", code=EXIT_USAGE)
    if not matching.by_id:
        fail(f"no prediction in {path} names a question of the set (matched by {mode}; "
             f"{len(preds)} predictions, e.g. keys {', '.join(p.key for p in preds[:5])}); try --match id or index", code=EXIT_USAGE)
    summary = matching.summary(path, fmt, mode, len(preds))
    return PredictionsSolver(matching, path), PredictionSandbox(), {"predictions": summary}


def _ids(ids: list[Any], limit: int = 10) -> str:
    shown = ", ".join(str(i) for i in ids[:limit])
    return shown + (f" ... (+{len(ids) - limit})" if len(ids) > limit else "")


def _echo_matching(info: dict[str, Any], show: Any = typer.echo) -> None:
    show(f"predictions: {info['matched']} of {info['predictions']} matched a question "
               f"({info['format']} file, matched by {info['match']})")
    if info["missing"]:
        _err(f"warning: {len(info['missing'])} question(s) have no prediction and score 0: {_ids(info['missing'])}")
    if info["unmatched"]:
        _err(f"warning: {len(info['unmatched'])} prediction(s) match no question and are not scored: "
             f"{_ids(info['unmatched'])}")
    if info["db_mismatch"]:
        _err(f"warning: {len(info['db_mismatch'])} prediction(s) name another database than their question "
             f"(run on the question's): {_ids([m['id'] for m in info['db_mismatch']])}")


def main() -> None:  # `python -m dia_assets.cli.eval ...` before the command is mounted
    app = typer.Typer(add_completion=False)
    app.command("eval")(eval)
    app()


if __name__ == "__main__":
    main()
