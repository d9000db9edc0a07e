"""React to the data folder and to an expert's overrides."""

from __future__ import annotations

import hashlib
import os
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
from pydantic import BaseModel

from dia_assets.agents.adaptation.data_cursor import DataCursor, RunOutcome, absorb, decide
from dia_assets.agents.adaptation.folder_index import StateFiles, folder_source, refresh
from dia_assets.agents.adaptation.settle import sightings, unsettled
from dia_assets.agents.adaptation.snapshot import interpreted_snapshot
from dia_assets.agents.data_folder import folder_id
from dia_assets.agents.interpreter.names import raw_key_name
from dia_assets.dagster.interpretation import (
    latest_raw_versions,
    raw_events,
    raw_partitions,
)
from dia_assets.dagster.resources.workspace import default_data_dir, default_workspace
from dia_assets.dagster.sensors.jobs import build_job, schema_job
from dia_assets.dagster.sensors.run_outcome import REQUEST_TAG, run_outcome
from dia_assets.dagster.sensors.settings import SENSOR_INTERVAL_S, build_tries, settle_s
from dia_assets.platform.files.object_store import ObjectStoreError, is_url
from dia_assets.platform.remote_workspace import sensor_view
from dia_assets.platform.workspace import Workspace

TRIGGER_TAG = "dia/trigger"  # why a sensor asked for a run, when a change of files does not say it all


def partition_requests(context: SensorEvaluationContext, wanted: set[str]) -> list:
    """Add a `raw_files` partition per new file (`wanted`: the folder's partition keys), delete
    the partitions of deleted files."""
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
    if not hashes:
        return set()
    try:
        instance = context.instance
    except DagsterInvariantViolationError:  # a context built without an instance (unit tests)
        return set()
    reported = latest_raw_versions(instance, set(hashes))
    return {key for key, digest in hashes.items() if reported[key] != digest}


def pending_outcome(context: SensorEvaluationContext, cursor: DataCursor, workspace: Path) -> RunOutcome | None:
    """What became of the run requested for the pending change (None: no pending change)."""
    if cursor.pending is None:
        return None
    try:
        instance = context.instance
    except DagsterInvariantViolationError:  # a context built without an instance (unit tests): cannot tell
        return "success"
    return run_outcome(instance, cursor.pending, workspace)


def where(data_dir: str, rel: str) -> Path | str:
    """A listed file's location: its path, or its object's URL."""
    return f"{data_dir.rstrip('/')}/{rel.replace(os.sep, '/')}" if is_url(data_dir) else Path(data_dir) / rel


def _result(cursor: DataCursor, before: str | None, reason: str, store: StateFiles,
            **kwargs: list) -> SensorResult | SkipReason:
    """A tick that requests nothing: a plain skip when it changed nothing either."""
    dumped = cursor.dump(store)
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
    data_dir, location = default_data_dir(), default_workspace()
    remote = is_url(data_dir)
    if not remote and not Path(data_dir).is_dir():
        return SkipReason(f"data folder {data_dir} does not exist")
    try:  # an s3:// workspace: the few files a tick reads, pulled into a folder of this machine
        workspace = sensor_view(location)
    except ObjectStoreError as err:
        return SkipReason(str(err))
    # First start, or first tick on another data folder or workspace (state is keyed by both):
    # compare with what the workspace's interpretation was built from, not with nothing or with
    # the previous folder, so the sensor does not rebuild what `make demo` (or a build before)
    # just built, and a switch is reported as such rather than as files added and deleted.
    here = folder_id(data_dir, location)
    store = StateFiles(Workspace(workspace).sensor_index)  # the stat index, and the cursor's large maps
    stored = DataCursor.parse(context.cursor, store)
    first = stored is None or not stored.about(here)
    if first:
        cursor = DataCursor(done=interpreted_snapshot(workspace, data_dir), folder=here,
                            switched_from=stored.folder if stored is not None else None)
    else:
        cursor = stored.model_copy(update={"folder": here})
    outcome = pending_outcome(context, cursor, workspace)
    if cursor.pending is not None and outcome == "running":
        return SkipReason(decide(cursor, cursor.pending.snapshot, outcome, build_tries()).wait)
    cursor = absorb(cursor, outcome)
    # list the folder (one stat per file) and hash only what moved since the index of the last tick
    try:
        lister, hasher = folder_source(data_dir)
        listing = lister()
        index, _ = refresh(listing, None if first else store.load_index(cursor.index), hasher)
    except ObjectStoreError as err:  # the bucket is gone or the keys refused: say so, change nothing
        return SkipReason(str(err))
    after = index.hashes()
    moving = [] if after == cursor.done else sorted(rel for rel, digest in after.items() if cursor.done.get(rel) != digest)
    now = time.time()
    listed = {item.path: item for item in listing}
    seen = sightings(listed, moving, now, cursor.seen)
    waiting = unsettled(moving, cursor.seen, seen, now, settle_s())
    cursor = cursor.model_copy(update={"seen": seen})
    if waiting:  # nothing is read (observed, partitioned, built) until every changed file settled
        cursor = cursor.model_copy(update={"index": store.save_index(index)})  # the hashes made, not reported
        return SensorResult(skip_reason=f"waiting for {', '.join(waiting)} to settle (size "
                            f"{'and ETag' if remote else 'and modification time'} unchanged for {settle_s():g} s "
                            "across two ticks)", cursor=cursor.dump(store))
    decision = decide(cursor, after, outcome, build_tries())
    # the partition keys (raw_partition_key, without a Path each) are needed only when the
    # files are not those the tick before reconciled, and for files not reported yet
    named = hashlib.sha256("\n".join(after).encode()).hexdigest()[:32]
    unreported = index.unreported()
    keys = {rel: raw_key_name(rel.replace(os.sep, "/")) for rel in (unreported if named == cursor.partitioned else after)}
    partitions = [] if named == cursor.partitioned else partition_requests(context, set(keys.values()))
    # only files whose hash this sensor has not reported yet are checked against the instance
    stale = unobserved(context, {keys[rel]: digest for rel, digest in unreported.items()})
    events = [event for rel, digest in sorted(unreported.items(), key=lambda kv: keys[kv[0]])
              if keys[rel] in stale for event in raw_events(keys[rel], where(data_dir, rel), digest, listed.get(rel))]
    index = index.all_reported()  # reported now, or found reported: the events go out with this cursor
    decision.cursor = decision.cursor.model_copy(update={"index": store.save_index(index), "partitioned": named})
    if decision.request is None:
        reason = decision.wait or "no change in the data folder"
        if first and stored is not None:
            reason = f"data folder changed: {stored.folder} -> {here}; it is built already"
        decision.cursor = decision.cursor.model_copy(update={"switched_from": None})
        if first:  # the first tick (on this folder) always stores what it found
            return SensorResult(skip_reason=reason, dynamic_partitions_requests=partitions, asset_events=events,
                                cursor=decision.cursor.dump(store))
        return _result(decision.cursor, context.cursor, reason, store, dynamic_partitions_requests=partitions, asset_events=events)
    change = decision.change
    if change.deleted:
        context.log.warning(f"files deleted from {data_dir}: {', '.join(change.deleted)}")
    ask, done = decision.request, decision.cursor
    if done.switched_from is not None:  # the first build of a folder switched to: say so
        ask = ask.model_copy(update={"trigger": f"data folder changed: {done.switched_from} -> {here}"[:4000]})
        done = done.model_copy(update={"pending": ask, "switched_from": None})
    if ask.tries > 1:
        context.log.warning(f"the run for this change ended {outcome}; asking again ({ask.run_key})")
    tags = {"dia/change": change.describe()[:4000], REQUEST_TAG: ask.key, "dia/try": str(ask.tries)}
    if ask.trigger:
        tags[TRIGGER_TAG] = ask.trigger
    return SensorResult(
        run_requests=[RunRequest(run_key=ask.run_key, tags=tags)],
        dynamic_partitions_requests=partitions,
        asset_events=events,
        cursor=done.dump(store),
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
    from dia_assets.agents.schema_creator.overrides import file_decisions
    from dia_assets.contracts.interpretation import Interpretation, undone_decisions

    decisions = file_decisions(overrides)
    try:
        groups = Interpretation.read(Workspace(workspace).interpretation).file_groups if decisions else []
    except (OSError, ValueError):  # no readable interpretation: the build makes one
        return build_job.name
    return build_job.name if undone_decisions(groups, decisions) else schema_job.name


@sensor(jobs=[schema_job, build_job], minimum_interval_seconds=SENSOR_INTERVAL_S,
        default_status=DefaultSensorStatus.RUNNING,
        description="An edit to review/interpretation_overrides.yaml re-plans the schema and everything downstream "
        "(from a new interpretation when it decides whether files are one table).")
def review_gate_sensor(context: SensorEvaluationContext) -> SensorResult | SkipReason:
    location = default_workspace()
    try:  # an s3:// workspace: its overrides and interpretation, pulled into a folder of this machine
        workspace = sensor_view(location)
    except ObjectStoreError as err:
        return SkipReason(str(err))
    path = Workspace(workspace).overrides
    current = overrides_fingerprint(path)
    if current is None:
        return SkipReason(f"{path} does not exist yet")
    here = folder_id(default_data_dir(), location)
    stored = OverridesCursor.parse(context.cursor)
    now = OverridesCursor(folder=here, fingerprint=current).model_dump_json()
    if context.cursor == now:
        return SkipReason("overrides unchanged")
    if stored is None or not stored.about(here):
        # first sight of this folder's overrides: the Schema Creator just wrote the template, or
        # the build that created the workspace already read the file; another folder's (or
        # workspace's) file is no earlier version of this one. Remember it, react to later edits.
        reason = "first sight of the overrides" if stored is None else f"data folder changed: {stored.folder} -> {here}"
        return SensorResult(skip_reason=f"{reason}; remembering {path}", cursor=now)
    if stored.fingerprint == current:  # a cursor of an older DIA: same file, now keyed by folder
        return SensorResult(skip_reason="overrides unchanged", cursor=now)
    return SensorResult(
        run_requests=[RunRequest(run_key=f"overrides-{current}", job_name=overrides_job(workspace, path),
                                 tags={TRIGGER_TAG: "overrides edited"})],
        cursor=now,
    )


class OverridesCursor(BaseModel):
    """What review_gate_sensor saw last: the overrides' fingerprint, and of which folder."""

    folder: str | None = None  # data_folder.folder_id; None: a cursor of an older DIA (fingerprint only)
    fingerprint: str

    @classmethod
    def parse(cls, text: str | None) -> OverridesCursor | None:
        if not text:
            return None
        if not text.startswith("{"):
            return cls(fingerprint=text)
        return cls.model_validate_json(text)

    def about(self, folder: str) -> bool:
        return self.folder in (None, folder)

