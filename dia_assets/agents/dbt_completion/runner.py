"""Run the completion agent over Spider2-DBT tasks and score each as the benchmark does:
per instance a scratch copy (`OUT/<instance_id>/project`, its own DuckDB file), the agent's
loop, then `duckdb_match` of the copy's database against the gold. Writes
`OUT/results.jsonl` (one record an instance) and `OUT/summary.json`."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from dia_assets.agents.dbt_completion.loop import Completion, complete_project
from dia_assets.agents.dbt_completion.oracle import MODEL as ORACLE_MODEL
from dia_assets.agents.dbt_completion.oracle import ORACLE_NAMES, PROVIDER, oracle_model
from dia_assets.agents.dbt_completion.scoring import duckdb_match
from dia_assets.agents.dbt_completion.scratch import ScratchProject
from dia_assets.agents.dbt_completion.tasks import DbtTask
from dia_assets.platform.model.base import ChatFn


def _chat(model: str, task: DbtTask) -> ChatFn:
    """The model door; the oracle is a scripted provider registered for this task."""
    from dia_assets.platform.model.litellm import litellm_chat, register_scripted

    if model in ORACLE_NAMES:
        register_scripted(oracle_model(task.solution), provider=PROVIDER)
        model = ORACLE_MODEL
    return litellm_chat(model)


def run_task(task: DbtTask, model: str, out: Path, max_turns: int = 30) -> dict[str, Any]:
    """One instance: scratch copy, agent, score. The record that results.jsonl holds."""
    started = time.perf_counter()
    scratch = ScratchProject(task.project, task.project_db(), out / task.instance_id)
    try:
        done = complete_project(_chat(model, task), scratch, task.instruction, max_turns)
    except Exception as err:  # a model or provider failure scores 0 for this instance, the run goes on
        done = Completion(status="error", message=f"{type(err).__name__}: {err}"[:1000])
    match = duckdb_match(scratch.database, task.gold_db, task.spec)
    return {"instance_id": task.instance_id, "score": match.score, "tables": match.tables,
            "elapsed_s": round(time.perf_counter() - started, 2),
            **{k: v for k, v in asdict(done).items() if k != "steps"}, "steps": done.steps}


def run_tasks(tasks: list[DbtTask], model: str, out: str | Path, max_turns: int = 30,
              progress: Callable[[int, int, dict[str, Any]], None] | None = None) -> dict[str, Any]:
    """Every instance in turn (dbt holds its DuckDB file per process; runs are seconds each)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    records = []
    with open(out / "results.jsonl", "w", encoding="utf-8") as f:
        for i, task in enumerate(tasks, 1):
            record = run_task(task, model, out, max_turns)
            f.write(json.dumps(record, default=str) + "\n")
            f.flush()
            records.append(record)
            if progress:
                progress(i, len(tasks), record)
    summary = summarize(records, model)
    (out / "summary.json").write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return summary


def summarize(records: list[dict[str, Any]], model: str) -> dict[str, Any]:
    n = len(records)
    correct = sum(r["score"] for r in records)
    return {"benchmark": "spider2-dbt", "model": model, "instances": n, "correct": correct,
            "score": round(100 * correct / n, 2) if n else None,
            "status_counts": dict(Counter(r["status"] for r in records)),
            "refusals": sum(r["refusals"] for r in records), "dbt_runs": sum(r["dbt_runs"] for r in records),
            "tokens_total": sum(r["tokens"] for r in records),
            "cost_usd_total": round(sum(r["cost_usd"] for r in records), 6),
            "elapsed_s": round(sum(r["elapsed_s"] for r in records), 2),
            "failed": [r["instance_id"] for r in records if not r["score"]]}
