"""React to the data folder and to an expert's overrides."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

from dagster import (
    AddDynamicPartitionsRequest,
    DagsterInvariantViolationError,
    DefaultSensorStatus,
    DeleteDynamicPartitionsRequest,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from dia_assets.agents.adaptation.data_cursor import DataCursor, RunOutcome, absorb, decide
from dia_assets.agents.adaptation.settle import stat_files, unsettled
from dia_assets.agents.adaptation.snapshot import interpreted_snapshot, snapshot
from dia_assets.interpretation_assets import (
    folder_partitions,
    latest_raw_version,
    raw_file_events,
    raw_partition_key,
    raw_partitions,
)
from dia_assets.resources.workspace import default_data_dir, default_workspace
from dia_assets.sensors.jobs import build_job, schema_job
from dia_assets.sensors.run_outcome import REQUEST_TAG, run_outcome
from dia_assets.sensors.settings import SENSOR_INTERVAL_S, build_tries, settle_s


def partition_requests(context: SensorEvaluationContext, data_dir: Path) -> list:
    """Add a `raw_files` partition per new file, delete the partitions of deleted files."""
    wanted = set(folder_partitions(data_dir))
    try:
        have = set(context.instance.get_dynamic_partitions(raw_partitions.name))
    except DagsterInvariantViolationError:  # a context built without an instance (unit tests)
        have = set()
    out: list = []
    if wanted - have:
        out.append(AddDynamicPartitionsRequest(raw_partitions.name, sorted(wanted - have)))
    if have - wanted:
        out.append(DeleteDynamicPartitionsRequest(raw_partitions.name, sorted(have - wanted)))
    return out


def unobserved(context: SensorEvaluationContext, hashes: dict[str, str]) -> set[str]:
    """Partitions (of `hashes`, partition -> content hash) whose last reported materialization is
    missing or records another content: the ones to report now."""
    out = set()
    for key, digest in hashes.items():
        try:
            if latest_raw_version(context.instance, key) != digest:
                out.add(key)
        except DagsterInvariantViolationError:  # a context built without an instance (unit tests)
            return set()
    return out


def pending_outcome(context: SensorEvaluationContext, cursor: DataCursor, workspace: Path) -> RunOutcome | None:
    """What became of the run requested for the pending change (None: no pending change)."""
    if cursor.pending is None:
        return None
    try:
        instance = context.instance
    except DagsterInvariantViolationError:  # a context built without an instance (unit tests): cannot tell
        return "success"
    return run_outcome(instance, cursor.pending, workspace)


def _result(cursor: DataCursor, before: str | None, reason: str, **kwargs: list) -> SensorResult | SkipReason:
    """A tick that requests nothing: a plain skip when it changed nothing either."""
    dumped = cursor.dump()
    if dumped == before and not any(kwargs.values()):
        return SkipReason(reason)
    return SensorResult(skip_reason=reason, cursor=dumped, **kwargs)


@sensor(job=build_job, minimum_interval_seconds=SENSOR_INTERVAL_S, default_status=DefaultSensorStatus.RUNNING,
        description="New, changed or deleted files in DIA_DATA_DIR rebuild the warehouse once per change, once "
        "they have settled (size and mtime unchanged for DIA_SETTLE_S); the change counts as done only when "
        "its run finished its checks (a failed, canceled or vanished run is asked for again). The raw_files "
        "partitions follow the folder and each new or changed file is reported as materialized (content hash, "
        "path, size, modification time).")
def new_data_sensor(context: SensorEvaluationContext) -> SensorResult | SkipReason:
    data_dir, workspace = Path(default_data_dir()), Path(default_workspace())
    if not data_dir.is_dir():
        return SkipReason(f"data folder {data_dir} does not exist")
    # First start: compare with what the workspace's interpretation was built from, not with
    # nothing, so the sensor does not rebuild what `make demo` (or a build before) just built.
    cursor = DataCursor.parse(context.cursor) or DataCursor(done=interpreted_snapshot(workspace, data_dir))
    outcome = pending_outcome(context, cursor, workspace)
    if cursor.pending is not None and outcome == "running":
        return SkipReason(decide(cursor, cursor.pending.snapshot, outcome, build_tries()).wait)
    cursor = absorb(cursor, outcome)
    after = snapshot(data_dir)
    moving = sorted(rel for rel, digest in after.items() if cursor.done.get(rel) != digest)
    now = time.time()
    seen = stat_files(data_dir, moving, now, cursor.seen)
    waiting = unsettled(moving, cursor.seen, seen, now, settle_s())
    cursor = cursor.model_copy(update={"seen": seen})
    if waiting:  # nothing is read (observed, partitioned, built) until every changed file settled
        return SensorResult(skip_reason=f"waiting for {', '.join(waiting)} to settle (size and modification time "
                            f"unchanged for {settle_s():g} s across two ticks)", cursor=cursor.dump())
    decision = decide(cursor, after, outcome, build_tries())
    partitions = partition_requests(context, data_dir)
    hashes = {raw_partition_key(data_dir / rel, data_dir): digest for rel, digest in after.items()}
    stale = unobserved(context, hashes)
    events = raw_file_events(data_dir, stale) if stale else []
    if decision.request is None:
        reason = decision.wait or "no change in the data folder"
        if context.cursor is None:  # the first tick always stores what it found
            return SensorResult(dynamic_partitions_requests=partitions, asset_events=events, cursor=decision.cursor.dump())
        return _result(decision.cursor, context.cursor, reason, dynamic_partitions_requests=partitions, asset_events=events)
    change = decision.change
    if change.deleted:
        context.log.warning(f"files deleted from {data_dir}: {', '.join(change.deleted)}")
    ask = decision.request
    if ask.tries > 1:
        context.log.warning(f"the run for this change ended {outcome}; asking again ({ask.run_key})")
    return SensorResult(
        run_requests=[RunRequest(run_key=ask.run_key, tags={"dia/change": change.describe()[:4000],
                                                            REQUEST_TAG: ask.key, "dia/try": str(ask.tries)})],
        dynamic_partitions_requests=partitions,
        asset_events=events,
        cursor=decision.cursor.dump(),
    )


def overrides_fingerprint(path: Path) -> str | None:
    """Hash of the lines that say something: a template of comments is no override."""
    if not path.exists():
        return None
    lines = [ln.split("#", 1)[0].rstrip() for ln in path.read_text(encoding="utf-8").splitlines()]
    meaningful = "\n".join(ln for ln in lines if ln.strip())
    return hashlib.sha256(meaningful.encode()).hexdigest()[:16]


def overrides_job(workspace: Path, overrides: Path) -> str:
    """`schema_job` re-plans from the interpretation; a `files` decision the interpretation was
    made without (files that may be one table) needs it made again: `build_job`."""
    from dia_assets.agents.interpreter.one_table import undone_decisions
    from dia_assets.agents.schema_creator.overrides import file_decisions
    from dia_assets.contracts.interpretation import Interpretation

    decisions = file_decisions(overrides)
    try:
        groups = Interpretation.read(workspace / "interpretation.json").file_groups if decisions else []
    except (OSError, ValueError):  # no readable interpretation: the build makes one
        return build_job.name
    return build_job.name if undone_decisions(groups, decisions) else schema_job.name


@sensor(jobs=[schema_job, build_job], minimum_interval_seconds=SENSOR_INTERVAL_S,
        default_status=DefaultSensorStatus.RUNNING,
        description="An edit to review/interpretation_overrides.yaml re-plans the schema and everything downstream "
        "(from a new interpretation when it decides whether files are one table).")
def review_gate_sensor(context: SensorEvaluationContext) -> SensorResult | SkipReason:
    workspace = Path(default_workspace())
    path = workspace / "review" / "interpretation_overrides.yaml"
    current = overrides_fingerprint(path)
    if current is None:
        return SkipReason(f"{path} does not exist yet")
    if context.cursor == current:
        return SkipReason("overrides unchanged")
    if context.cursor is None:
        # first sight: the Schema Creator just wrote the template, or the build that created
        # the workspace already read the file; remember it and react to later edits
        return SensorResult(cursor=current)
    return SensorResult(
        run_requests=[RunRequest(run_key=f"overrides-{current}", job_name=overrides_job(workspace, path),
                                 tags={"dia/trigger": "overrides edited"})],
        cursor=current,
    )

