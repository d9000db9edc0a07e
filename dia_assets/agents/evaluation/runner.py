"""Score a question set with a solver: parallel workers, resumable output, progress callback.

`--out DIR` holds:
- `run.json`: the run configuration (a resumed run must use the same solver/model);
- `results.jsonl`: one `InstanceRecord` per scored instance, appended as each finishes, so an
  interrupted run loses at most the instances in flight. On restart, instances with a record
  are skipped (broken ones are tried again: their gold or database may have been fixed; the
  last record of an id wins); a torn last line is ignored (and that instance redone);
- `summary.json`, `report.md`: written at the end from every record of the question set.

Per instance: run the gold alternatives (transpiled to the database's dialect); if none runs the
instance is `broken` (reported, not counted against the model, the solver is not called).
Otherwise ask the solver, run its SQL, and score EX, soft-F1, VES and the failure class.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any

from dia_assets.agents.evaluation.databases import (
    Database,
    DatabaseResolver,
    QueryTimeout,
    ResultSet,
)
from dia_assets.agents.evaluation.datasets import transpile_gold
from dia_assets.agents.evaluation.evaluators import Evaluator, ScoringContext, default_evaluators
from dia_assets.agents.evaluation.models import (
    EvalInstance,
    Execution,
    InstanceRecord,
    Prediction,
    RunConfig,
)
from dia_assets.agents.evaluation.report import summarize, write_reports
from dia_assets.agents.evaluation.solvers import Solver
from dia_assets.agents.jsonable import jsonable

RESULTS, RUN = "results.jsonl", "run.json"
PREVIEW_ROWS = 5

Progress = Callable[[int, int, InstanceRecord | None], None]


class EvalError(RuntimeError):
    pass




# Runs a predicted SQL string: (None, None) when there is nothing to run.
Executor = Callable[[Database, str, float], tuple[Execution | None, ResultSet | None]]


def execute(db: Database, sql: str, timeout_s: float) -> tuple[Execution, ResultSet | None]:
    """Run one statement on the read-only connection; errors and timeouts become records."""
    try:
        res = db.query(sql, timeout_s)
    except QueryTimeout as err:
        return Execution(sql=sql, ok=False, timeout=True, error=str(err)), None
    except Exception as err:
        return Execution(sql=sql, ok=False, error=f"{type(err).__name__}: {err}"[:600]), None
    return Execution(sql=sql, ok=True, columns=list(res.columns), row_count=len(res.rows),
                     elapsed_s=round(res.elapsed_s, 6),
                     preview=[jsonable(list(r)) for r in res.rows[:PREVIEW_ROWS]]), res


def _execute_given(db: Database, sql: str, timeout_s: float) -> tuple[Execution | None, ResultSet | None]:
    """The agent's SQL (already through its gate): run as given; blank SQL is no answer."""
    return execute(db, sql, timeout_s) if sql.strip() else (None, None)


def score_instance(instance: EvalInstance, db: Database, solver: Solver, *, timeout_s: float = 30.0,
                   ves_iterations: int = 10, decimals: int | None = None, soft_f1_order: str = "sorted",
                   evaluators: Sequence[Evaluator] | None = None,
                   execute_pred: Executor | None = None) -> InstanceRecord:
    """Run the gold alternatives, ask the solver, run its SQL, apply the evaluators.
    `execute_pred` runs the predicted SQL (default: as given, nothing for blank SQL;
    `sandbox.PredictionSandbox` for SQL from a predictions file)."""
    places = instance.decimals if instance.decimals is not None else decimals
    base = {"id": instance.id, "db": instance.db, "question": instance.question,
            "difficulty": instance.difficulty, "order_matters": instance.order_matters, "decimals": places}
    golds: list[Execution] = []
    gold_results: list[ResultSet | None] = []
    gold_sql: list[str | None] = []
    for sql in instance.gold_sql:
        try:
            sql = transpile_gold(sql, instance.dialect, db.dialect, db.column_types)
        except Exception as err:
            golds.append(Execution(sql=sql, ok=False, error=f"transpile: {err}"[:600]))
            gold_results.append(None)
            gold_sql.append(None)
            continue
        ex, res = execute(db, sql, timeout_s)
        golds.append(ex)
        gold_results.append(res)
        gold_sql.append(sql if res is not None else None)
    if not any(r is not None for r in gold_results):
        reason = "; ".join(("timeout" if g.timeout else (g.error or "failed")) for g in golds)
        return InstanceRecord(**base, status="broken", gold=golds, broken_reason=f"gold query failed: {reason}"[:600])

    try:
        prediction = solver.solve(instance, db)
    except Exception as err:
        prediction = Prediction(sql=None, status="error", sql_source="none", error=f"{type(err).__name__}: {err}"[:500])
    pred_exec: Execution | None = None
    pred_res: ResultSet | None = None
    if prediction.sql is not None:
        pred_exec, pred_res = (execute_pred or _execute_given)(db, prediction.sql, timeout_s)

    ctx = ScoringContext(instance=instance, db=db, prediction=prediction, gold=gold_results, gold_sql=gold_sql,
                         pred=pred_res, pred_execution=pred_exec, decimals=places, timeout_s=timeout_s)
    fields: dict[str, Any] = {}
    for evaluator in evaluators if evaluators is not None else default_evaluators(ves_iterations, soft_f1_order):
        out = evaluator.evaluate(ctx)
        ctx.scores.update(out)
        fields.update(out)
    known = set(InstanceRecord.model_fields)
    record_fields = {k: v for k, v in fields.items() if k in known}
    extra = {k: jsonable(v) for k, v in fields.items() if k not in known}
    record_fields.setdefault("status", "correct" if ctx.matched is not None else "incorrect")
    return InstanceRecord(**base, **record_fields, gold=golds, pred=pred_exec, prediction=prediction, extra=extra)


# -- output folder ----------------------------------------------------------------------------------


def read_records(out_dir: Path) -> dict[str, InstanceRecord]:
    """Records already in `results.jsonl` (last one wins; torn or invalid lines are skipped)."""
    path = Path(out_dir) / RESULTS
    records: dict[str, InstanceRecord] = {}
    if not path.exists():
        return records
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        try:
            rec = InstanceRecord.model_validate_json(line)
        except Exception:
            continue
        records[rec.id] = rec
    return records


def _check_config(out_dir: Path, config: RunConfig, force: bool) -> None:
    path = out_dir / RUN
    if path.exists() and not force:
        old = RunConfig.model_validate_json(path.read_text(encoding="utf-8"))
        if (old.solver, old.model) != (config.solver, config.model):
            raise EvalError(
                f"{out_dir} holds results of {old.solver} ({old.model}); this run is {config.solver} "
                f"({config.model}). Use another --out, or --force to mix them.")
        config.started_at = old.started_at or config.started_at
    path.write_text(config.model_dump_json(indent=2), encoding="utf-8")


class _Connections:
    """One open database per (thread, db id); all closed at the end."""

    def __init__(self, resolver: DatabaseResolver) -> None:
        self.resolver = resolver
        self.local = threading.local()
        self.lock = threading.Lock()
        self.opened: list[Database] = []

    def get(self, db_id: str) -> Database:
        cache = getattr(self.local, "dbs", None)
        if cache is None:
            cache = self.local.dbs = {}
        if db_id not in cache:
            db = self.resolver.open(db_id)
            cache[db_id] = db
            with self.lock:
                self.opened.append(db)
        return cache[db_id]

    def close(self) -> None:
        with self.lock:
            for db in self.opened:
                db.close()
            self.opened.clear()


def _broken_no_db(instance: EvalInstance, err: Exception) -> InstanceRecord:
    return InstanceRecord(id=instance.id, db=instance.db, question=instance.question,
                          difficulty=instance.difficulty, status="broken",
                          broken_reason=f"database: {type(err).__name__}: {err}"[:600])


def run_eval(
    instances: Sequence[EvalInstance],
    db: str | Path | DatabaseResolver,
    solver: Solver,
    out_dir: str | Path,
    *,
    workers: int = 1,
    timeout_s: float = 30.0,
    ves_iterations: int = 10,
    decimals: int | None = None,
    progress: Progress | None = None,
    config: RunConfig | None = None,
    force: bool = False,
    soft_f1_order: str = "sorted",
    evaluators: Sequence[Evaluator] | None = None,
    execute_pred: Executor | None = None,
    summary_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score every instance not yet in `out_dir`, then write the summary and the report.
    `summary_extra` is merged into the summary (and shown in the report: e.g. how a predictions
    file matched the question set). Returns the summary (see `report.summarize`)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    resolver = db if isinstance(db, DatabaseResolver) else DatabaseResolver(db)
    config = config or RunConfig(questions="(in memory)", db=resolver.spec, solver=solver.name, workers=workers,
                                 timeout_s=timeout_s, ves_iterations=ves_iterations, decimals=decimals,
                                 soft_f1_order=soft_f1_order)  # type: ignore[arg-type]
    if not config.started_at:
        config.started_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")
    _check_config(out, config, force)

    done = read_records(out)
    # broken instances (gold failed, database missing) are tried again: the fix may be in place
    pending = [i for i in instances if i.id not in done or done[i.id].status == "broken"]
    total = len(instances)
    finished = total - len(pending)
    if progress:
        progress(finished, total, None)

    lock = threading.Lock()
    connections = _Connections(resolver)

    def work(instance: EvalInstance) -> InstanceRecord:
        try:
            database = connections.get(instance.db)
        except Exception as err:
            return _broken_no_db(instance, err)
        return score_instance(instance, database, solver, timeout_s=timeout_s,
                              ves_iterations=ves_iterations, decimals=decimals, soft_f1_order=soft_f1_order,
                              evaluators=evaluators, execute_pred=execute_pred)

    results_path = out / RESULTS
    torn = results_path.exists() and results_path.stat().st_size > 0 and not results_path.read_bytes().endswith(b"\n")
    with results_path.open("a", encoding="utf-8") as fh:
        if torn:  # a line cut short by a kill: end it so the next record starts on its own line
            fh.write("\n")
        def save(record: InstanceRecord) -> None:
            nonlocal finished
            with lock:
                fh.write(record.model_dump_json() + "\n")
                fh.flush()
                done[record.id] = record
                finished += 1
            if progress:
                progress(finished, total, record)

        try:
            if workers <= 1:
                for instance in pending:
                    save(work(instance))
            else:
                pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="dia-eval")
                try:
                    queue = iter(pending)
                    running: set[Future[InstanceRecord]] = set()
                    for instance in queue:  # keep at most `workers` in flight: a stop loses little
                        running.add(pool.submit(work, instance))
                        if len(running) >= workers:
                            break
                    while running:
                        finished_now, running = wait(running, return_when=FIRST_COMPLETED)
                        for fut in finished_now:
                            save(fut.result())
                            nxt = next(queue, None)
                            if nxt is not None:
                                running.add(pool.submit(work, nxt))
                finally:
                    pool.shutdown(wait=True, cancel_futures=True)
        finally:
            connections.close()

    records = [done[i.id] for i in instances if i.id in done]
    summary = {**summarize(records, config), **(summary_extra or {})}
    write_reports(summary, records, out)
    return summary
