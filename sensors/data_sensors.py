"""React to the data folder and to an expert's overrides."""

from __future__ import annotations

import hashlib
import json
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

from dia_assets.agents.adaptation.snapshot import diff, interpreted_snapshot, run_key, snapshot
from dia_assets.interpretation_assets import (
    DATA_VERSION_TAG,
    folder_partitions,
    raw_observations,
    raw_partition_key,
    raw_partitions,
)
from dia_assets.table_specs import RAW_FILES
from resources.workspace import default_data_dir, default_workspace
from sensors.jobs import build_job, schema_job
from sensors.settings import SENSOR_INTERVAL_S


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
    """Partitions (of `hashes`, partition -> content hash) whose last observation is missing or
    records another content: the ones to observe now."""
    out = set()
    for key, digest in hashes.items():
        try:
            record = context.instance.get_latest_data_version_record(RAW_FILES, is_source=True, partition_key=key)
        except DagsterInvariantViolationError:  # a context built without an instance (unit tests)
            return set()
        tags = record.asset_observation.tags if record and record.asset_observation else {}
        if (tags or {}).get(DATA_VERSION_TAG) != digest:
            out.add(key)
    return out


@sensor(job=build_job, minimum_interval_seconds=SENSOR_INTERVAL_S, default_status=DefaultSensorStatus.RUNNING,
        description="New, changed or deleted files in DIA_DATA_DIR rebuild the warehouse once per change; the "
        "raw_files partitions follow the folder and each new or changed file is observed (its content hash).")
def new_data_sensor(context: SensorEvaluationContext) -> SensorResult | SkipReason:
    data_dir = Path(default_data_dir())
    if not data_dir.is_dir():
        return SkipReason(f"data folder {data_dir} does not exist")
    # First start: compare with what the workspace's interpretation was built from, not with
    # nothing, so the sensor does not rebuild what `make demo` (or a build before) just built.
    before = json.loads(context.cursor) if context.cursor else interpreted_snapshot(Path(default_workspace()), data_dir)
    after = snapshot(data_dir)
    change = diff(before, after)
    partitions = partition_requests(context, data_dir)
    hashes = {raw_partition_key(data_dir / rel, data_dir): digest for rel, digest in after.items()}
    stale = unobserved(context, hashes)
    events = raw_observations(data_dir, stale) if stale else []
    cursor = json.dumps(after, sort_keys=True)
    if not change.any:
        if partitions or events or not context.cursor:
            return SensorResult(dynamic_partitions_requests=partitions, asset_events=events, cursor=cursor)
        return SkipReason("no change in the data folder")
    if change.deleted:
        context.log.warning(f"files deleted from {data_dir}: {', '.join(change.deleted)}")
    return SensorResult(
        run_requests=[RunRequest(run_key=run_key(after, before), tags={"dia/change": change.describe()[:4000]})],
        dynamic_partitions_requests=partitions,
        asset_events=events,
        cursor=cursor,
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

