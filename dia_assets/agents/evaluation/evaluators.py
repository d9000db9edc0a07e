"""Evaluators: plain typed objects that score one executed instance (the pydantic_evals idea).

The runner executes the gold alternatives and the prediction once, builds a `ScoringContext`
and applies its evaluators in order; each returns fields of the instance record. Fields the
record does not know land in `InstanceRecord.extra`, so a custom evaluator needs no change
elsewhere:

    @dataclass
    class RowCount:
        name: str = "row_count"
        def evaluate(self, ctx: ScoringContext) -> dict[str, Any]:
            return {"pred_rows": len(ctx.pred.rows) if ctx.pred else None}

    run_eval(..., evaluators=[*default_evaluators(), RowCount()])

`ExecutionAccuracy` must come first: VES and the failure class read its verdict.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from dia_assets.agents.evaluation.databases import Database, ResultSet
from dia_assets.agents.evaluation.failures import classify
from dia_assets.agents.evaluation.metrics import (
    best_soft_f1,
    execution_match,
    measure_time_ratio,
    ves_reward,
)
from dia_assets.agents.evaluation.models import EvalInstance, Execution, Prediction


@dataclass
class ScoringContext:
    """Everything known about one instance once gold and prediction have run."""

    instance: EvalInstance
    db: Database
    prediction: Prediction
    gold: list[ResultSet | None]  # per acceptable gold query; None: it did not run
    gold_sql: list[str | None]  # the gold queries as executed (transpiled)
    pred: ResultSet | None  # None: no SQL, or it failed
    pred_execution: Execution | None
    decimals: int | None = None
    timeout_s: float = 30.0
    matched: int | None = None  # set by ExecutionAccuracy
    scores: dict[str, Any] = field(default_factory=dict)

    @property
    def gold_rows(self) -> list[list[tuple[Any, ...]] | None]:
        return [r.rows if r is not None else None for r in self.gold]


@runtime_checkable
class Evaluator(Protocol):
    name: str

    def evaluate(self, ctx: ScoringContext) -> dict[str, Any]: ...


@dataclass
class ExecutionAccuracy:
    """EX with BIRD's rules (metrics.execution_match)."""

    name: str = "ex"

    def evaluate(self, ctx: ScoringContext) -> dict[str, Any]:
        if ctx.pred is not None:
            ctx.matched = execution_match(ctx.pred.rows, ctx.gold_rows, ctx.instance.order_matters, ctx.decimals)
        ok = ctx.matched is not None
        return {"ex": int(ok), "matched_gold": ctx.matched, "status": "correct" if ok else "incorrect"}


@dataclass
class SoftF1:
    """BIRD's soft-F1, best over the acceptable gold results. `order`: "sorted" aligns rows in
    one canonical order when the instance's order does not matter (deterministic on engines
    that return unordered rows arbitrarily); "executed" is BIRD's code to the letter."""

    order: str = "sorted"
    name: str = "soft_f1"

    def evaluate(self, ctx: ScoringContext) -> dict[str, Any]:
        if ctx.pred is None:
            return {"soft_f1": 0.0}
        sort_rows = self.order == "sorted" and not ctx.instance.order_matters
        return {"soft_f1": round(best_soft_f1(ctx.pred.rows, ctx.gold_rows, ctx.decimals, sort_rows), 6)}


# One instance is timed at a time in the whole process: with worker threads timing in
# parallel, the ratios depended on --workers (VES 90-94 with one worker, 99-105 with 2-8).
TIMING_LOCK = threading.Lock()


@dataclass
class ValidEfficiency:
    """BIRD's VES reward rho(tau) for a correct instance, and tau itself: gold and prediction
    timed alternately `iterations` times on the same open connection (execute and fetch, as
    BIRD does), one instance at a time (`TIMING_LOCK`). 0 for an incorrect instance; None when
    not measured (`iterations` 0)."""

    iterations: int = 10
    name: str = "ves"

    def evaluate(self, ctx: ScoringContext) -> dict[str, Any]:
        if ctx.matched is None:
            return {"ves_reward": 0.0, "time_ratio": None}
        if self.iterations <= 0:
            return {"ves_reward": None, "time_ratio": None}
        gold_sql = ctx.gold_sql[ctx.matched] or ""
        # the statement as it ran (a predictions file's SQL runs as the gate regenerated it)
        executed = ctx.pred_execution.sql if ctx.pred_execution is not None else None
        pred_sql = executed if executed is not None else ctx.prediction.sql or ""
        try:
            with TIMING_LOCK:
                tau = measure_time_ratio(lambda: ctx.db.query(gold_sql, ctx.timeout_s),
                                         lambda: ctx.db.query(pred_sql, ctx.timeout_s), self.iterations)
        except Exception:  # BIRD: an error while timing earns no reward
            return {"ves_reward": 0.0, "time_ratio": None}
        return {"ves_reward": ves_reward(tau), "time_ratio": round(tau, 6)}


@dataclass
class FailureClass:
    """DIA App. C class of an incorrect instance (failures.classify)."""

    name: str = "failure_class"

    def evaluate(self, ctx: ScoringContext) -> dict[str, Any]:
        if ctx.matched is not None:
            return {"failure_class": None, "failure_detail": ""}
        pe = ctx.pred_execution
        schema = None
        if pe is not None and not pe.ok:
            try:
                schema = ctx.db.schema()
            except Exception:
                schema = None
        cls, detail = classify(
            sql=ctx.prediction.sql, pred_ok=bool(pe and pe.ok),
            pred_error=pe.error if pe else ctx.prediction.error, pred_timeout=bool(pe and pe.timeout),
            pred_rows=ctx.pred.rows if ctx.pred else None, pred_columns=ctx.pred.columns if ctx.pred else [],
            golds=[(r.rows, r.columns) if r is not None else None for r in ctx.gold],
            schema=schema, dialect=ctx.db.dialect, order_matters=ctx.instance.order_matters,
            decimals=ctx.decimals, status=ctx.prediction.status,
        )
        return {"failure_class": cls, "failure_detail": detail}


def default_evaluators(ves_iterations: int = 10, soft_f1_order: str = "sorted") -> list[Evaluator]:
    return [ExecutionAccuracy(), SoftF1(soft_f1_order), ValidEfficiency(ves_iterations), FailureClass()]
