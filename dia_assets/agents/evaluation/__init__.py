"""Evaluation harness (issue 7): benchmark-grade scoring of the Query Generator.

Framework-free, in the spirit of pydantic_evals: datasets and scorers are plain typed objects.

    from dia_assets.agents.evaluation import AgentSolver, load_instances, run_eval
    instances = load_instances("examples/eval/questions.jsonl")
    summary = run_eval(instances, "dia_workspace/warehouse.duckdb", AgentSolver("oracle"), "eval_out")

Modules, one concept each: `models` (instances, predictions, records), `datasets` (BIRD, Spider,
defog sql-eval, our JSONL), `databases` (read-only SQLite/DuckDB/PostgreSQL with timeouts),
`metrics` (EX, soft-F1, VES after DIA App. A.2 and BIRD's code), `failures` (App. C classes),
`evaluators` (the metrics as typed objects applied per instance), `fidelity` (gold SQL on
several engines' builds of the same files, compared row for row),
`solvers` (the `Solver` protocol, `OracleSolver`, `AgentSolver`), `predictions` (another
system's predictions file, matched to the question set), `sandbox` (its SQL through the gate,
as BIRD's scorer runs it), `oracle` (the litellm
provider that answers with the gold SQL), `runner` (parallel, resumable), `report` (JSON and
Markdown), `sample` (the bundled question set's stand-in warehouse).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dia_assets.platform.lazy import lazy_exports

if TYPE_CHECKING:
    from dia_assets.agents.evaluation.databases import (
        Database,
        DatabaseResolver,
        QueryTimeout,
        open_database,
    )
    from dia_assets.agents.evaluation.datasets import (
        default_db,
        detect_format,
        load_instances,
        transpile_gold,
    )
    from dia_assets.agents.evaluation.evaluators import (
        Evaluator,
        ExecutionAccuracy,
        FailureClass,
        ScoringContext,
        SoftF1,
        ValidEfficiency,
        default_evaluators,
    )
    from dia_assets.agents.evaluation.failures import classify
    from dia_assets.agents.evaluation.fidelity import Agreement, compare_engines
    from dia_assets.agents.evaluation.metrics import (
        best_soft_f1,
        execution_match,
        results_match,
        soft_f1,
        time_ratio,
        ves,
        ves_reward,
    )
    from dia_assets.agents.evaluation.models import (
        EvalInstance,
        InstanceRecord,
        Prediction,
        RunConfig,
    )
    from dia_assets.agents.evaluation.predictions import (
        PredictionsSolver,
        match_predictions,
        read_predictions,
    )
    from dia_assets.agents.evaluation.report import render_markdown, summarize
    from dia_assets.agents.evaluation.runner import (
        EvalError,
        read_records,
        run_eval,
        score_instance,
    )
    from dia_assets.agents.evaluation.sandbox import PredictionSandbox
    from dia_assets.agents.evaluation.solvers import AgentSolver, OracleSolver, Solver

# Each name is imported from its module on first use (PEP 562), so importing one
# submodule (the Dagster code location, a run worker) does not import them all.
_EXPORTS = {
    "Database": "dia_assets.agents.evaluation.databases",
    "DatabaseResolver": "dia_assets.agents.evaluation.databases",
    "QueryTimeout": "dia_assets.agents.evaluation.databases",
    "open_database": "dia_assets.agents.evaluation.databases",
    "default_db": "dia_assets.agents.evaluation.datasets",
    "detect_format": "dia_assets.agents.evaluation.datasets",
    "load_instances": "dia_assets.agents.evaluation.datasets",
    "transpile_gold": "dia_assets.agents.evaluation.datasets",
    "Evaluator": "dia_assets.agents.evaluation.evaluators",
    "ExecutionAccuracy": "dia_assets.agents.evaluation.evaluators",
    "FailureClass": "dia_assets.agents.evaluation.evaluators",
    "ScoringContext": "dia_assets.agents.evaluation.evaluators",
    "SoftF1": "dia_assets.agents.evaluation.evaluators",
    "ValidEfficiency": "dia_assets.agents.evaluation.evaluators",
    "default_evaluators": "dia_assets.agents.evaluation.evaluators",
    "classify": "dia_assets.agents.evaluation.failures",
    "Agreement": "dia_assets.agents.evaluation.fidelity",
    "compare_engines": "dia_assets.agents.evaluation.fidelity",
    "best_soft_f1": "dia_assets.agents.evaluation.metrics",
    "execution_match": "dia_assets.agents.evaluation.metrics",
    "results_match": "dia_assets.agents.evaluation.metrics",
    "soft_f1": "dia_assets.agents.evaluation.metrics",
    "time_ratio": "dia_assets.agents.evaluation.metrics",
    "ves": "dia_assets.agents.evaluation.metrics",
    "ves_reward": "dia_assets.agents.evaluation.metrics",
    "EvalInstance": "dia_assets.agents.evaluation.models",
    "InstanceRecord": "dia_assets.agents.evaluation.models",
    "Prediction": "dia_assets.agents.evaluation.models",
    "RunConfig": "dia_assets.agents.evaluation.models",
    "PredictionsSolver": "dia_assets.agents.evaluation.predictions",
    "match_predictions": "dia_assets.agents.evaluation.predictions",
    "read_predictions": "dia_assets.agents.evaluation.predictions",
    "render_markdown": "dia_assets.agents.evaluation.report",
    "summarize": "dia_assets.agents.evaluation.report",
    "EvalError": "dia_assets.agents.evaluation.runner",
    "read_records": "dia_assets.agents.evaluation.runner",
    "run_eval": "dia_assets.agents.evaluation.runner",
    "score_instance": "dia_assets.agents.evaluation.runner",
    "PredictionSandbox": "dia_assets.agents.evaluation.sandbox",
    "AgentSolver": "dia_assets.agents.evaluation.solvers",
    "OracleSolver": "dia_assets.agents.evaluation.solvers",
    "Solver": "dia_assets.agents.evaluation.solvers",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


__all__ = [
    "AgentSolver",
    "Agreement",
    "Database",
    "DatabaseResolver",
    "EvalError",
    "EvalInstance",
    "Evaluator",
    "ExecutionAccuracy",
    "FailureClass",
    "InstanceRecord",
    "OracleSolver",
    "Prediction",
    "PredictionSandbox",
    "PredictionsSolver",
    "QueryTimeout",
    "RunConfig",
    "ScoringContext",
    "SoftF1",
    "Solver",
    "ValidEfficiency",
    "best_soft_f1",
    "classify",
    "compare_engines",
    "default_evaluators",
    "default_db",
    "detect_format",
    "execution_match",
    "load_instances",
    "match_predictions",
    "open_database",
    "read_predictions",
    "read_records",
    "render_markdown",
    "results_match",
    "run_eval",
    "score_instance",
    "soft_f1",
    "summarize",
    "time_ratio",
    "transpile_gold",
    "ves",
    "ves_reward",
]
