"""Honest per-question statuses for the question assets (`query_result`, `analysis_result`).

Both run every question of a backfill in one run (`BackfillPolicy.single_run()`): the step gets
the whole key range in `context.partition_keys`. A step that returned one output would mark
every partition of that range materialized, answered or not. So the assets are multi-assets
with a skippable spec and `can_subset=True` (their output and check outputs are optional) that
never return the output; instead, per question:

- answered: an `AssetMaterialization` for that partition, with the answer's metadata;
- not answered: no materialization (the partition stays *Missing* or reads *Failed*), an
  `AssetObservation` for that partition saying why;
- either way: an `answered` check evaluation for that partition.

After every question was tried, the step raises `Failure` naming the unanswered ones. Dagster's
asset backfill treats a failed ranged run exactly this way (`_get_failed_asset_graph_subset`
in dagster/_core/execution/asset_backfill.py: "A ranged run can materialize some partitions
of an asset and fail on others"): the materialized partitions count as done, the others as
failed, and assets downstream of a failed partition are skipped, as for any failed partition."""

import warnings
from collections.abc import Callable, Iterator, Sequence

from dagster import (
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    BackfillPolicy,
    Failure,
    MaterializeResult,
    MetadataValue,
    PreviewWarning,
)
from dagster._core.definitions.asset_checks.asset_check_evaluation import AssetCheckEvaluation

SINGLE_RUN = BackfillPolicy.single_run()
ANSWERED_CHECK = "answered"


def answered_check_spec(asset_key: AssetKey, partitions_def: object) -> AssetCheckSpec:
    """The `answered` check, evaluated per question (partition), not once per run: a partitioned
    check spec (a preview feature in Dagster 1.13, hence the warning filter)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PreviewWarning)
        return AssetCheckSpec(ANSWERED_CHECK, asset=asset_key, partitions_def=partitions_def,  # type: ignore[arg-type]
                              description="The question has a verified answer; fails with the reason otherwise "
                              "(no model, unanswerable, failed).")


def _is_answered(result: MaterializeResult) -> bool:
    status = (result.metadata or {}).get("status")
    return getattr(status, "value", status) == "answered"


def record(context: AssetExecutionContext, asset_key: AssetKey, key: str, result: MaterializeResult) -> bool:
    """Log one question's outcome on its partition; True when it was answered (materialized)."""
    answered = _is_answered(result)
    metadata = dict(result.metadata or {})
    if answered:
        context.log_event(AssetMaterialization(asset_key, partition=key, metadata=metadata))
    else:
        context.log_event(AssetObservation(asset_key, partition=key, metadata=metadata))
    for check in result.check_results or []:
        context.log_event(AssetCheckEvaluation(
            asset_key=asset_key, check_name=check.check_name or ANSWERED_CHECK, passed=check.passed,
            metadata=check.metadata, severity=check.severity, description=check.description, partition=key))
    return answered


def unanswered(key: str, reason: str) -> MaterializeResult:
    """The outcome of a question whose attempt stopped with an error before a result."""
    return MaterializeResult(metadata={"status": "error", "message": reason[:2000]})


def answer_each(context: AssetExecutionContext, asset_key: AssetKey,
                answer_one: Callable[[str], MaterializeResult]) -> Iterator[MaterializeResult]:
    """A generator that yields nothing (the assets' outputs stay unreturned; see above).
    Answer every question of the run (one partition or a backfill's range) in key order, so a
    follow-up comes after the question it follows; record each; fail the step at the end when
    any question was not answered, naming them. An error on one question does not stop the rest."""
    keys: Sequence[str] = context.partition_keys
    missed: dict[str, str] = {}
    for key in keys:
        try:
            result = answer_one(key)
        except Exception as err:  # noqa: BLE001 - one question's error must not hide the others' answers
            context.log.error(f"{key}: {type(err).__name__}: {err}")
            result = unanswered(key, f"{type(err).__name__}: {err}")
        if not record(context, asset_key, key, result):
            meta = result.metadata or {}
            status, message = (getattr(meta.get(k), "value", meta.get(k)) for k in ("status", "message"))
            missed[key] = f"{status}: {message}"
    context.log.info(f"{len(keys) - len(missed)} of {len(keys)} question(s) answered")
    if missed:
        raise Failure(
            description=f"{len(missed)} of {len(keys)} question(s) not answered (their partitions are not "
            f"materialized): " + "; ".join(f"{k} ({v})" for k, v in missed.items())[:3000],
            metadata={"unanswered": MetadataValue.json(missed), "answered": len(keys) - len(missed)},
        )
    yield from ()
