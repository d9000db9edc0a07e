"""`dia eval --tasks spider2-dbt PATH`: the completion agent over Spider2-DBT's task layout
(`dia_assets.agents.dbt_completion`), scored with the benchmark's `duckdb_match`."""

from __future__ import annotations

from pathlib import Path

import typer

from dia_assets.cli.common import EXIT_USAGE, echo_json, fail


def is_dbt_tasks(path: Path) -> bool:
    from dia_assets.agents.dbt_completion import tasks_file

    return tasks_file(path) is not None


def eval_dbt(path: Path, gold: Path | None, model: str, out: Path, limit: int | None, quiet: bool,
             as_json: bool, fail_under: float | None) -> None:
    from dia_assets.agents.dbt_completion import load_tasks, run_tasks

    try:
        tasks = load_tasks(path, gold, limit)
    except (OSError, ValueError, KeyError) as err:
        fail(f"cannot read Spider2-DBT tasks at {path}: {err}",
             "pass spider2-dbt.jsonl (or its folder) with evaluation_suite/gold beside it, or --gold", EXIT_USAGE)

    def progress(done: int, total: int, record: dict) -> None:
        if not quiet:
            typer.echo(f"[{done}/{total}] {record['instance_id']}: {record['score']} ({record['status']}, "
                       f"{record['elapsed_s']} s)", err=True)

    summary = run_tasks(tasks, model, out, progress=progress)
    if as_json:
        echo_json(summary)
    else:
        typer.echo(f"spider2-dbt score {summary['score']}% ({summary['correct']}/{summary['instances']}); "
                   f"{summary['refusals']} refusals, {summary['dbt_runs']} dbt runs, "
                   f"tokens {summary['tokens_total']}, cost USD {summary['cost_usd_total']:.4f}")
        typer.echo(f"wrote {out / 'results.jsonl'} and {out / 'summary.json'}")
    if fail_under is not None and (summary["score"] or 0.0) < fail_under:
        fail(f"score {summary['score']}% is below --fail-under {fail_under}")
