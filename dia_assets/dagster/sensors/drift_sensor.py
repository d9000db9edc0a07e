"""Compare each new interpretation with the one before it, and translate the reaction.

The reaction is decided in `agents/adaptation/react.py` as plain data (jobs to run, checks to
fail, review lines; its docstring gives the rules); this sensor only turns it into Dagster run
requests, check evaluations, an `AssetObservation` on `interpretation` and `drift/<time>.json`,
so a tick that detects drift is never SKIPPED. A failed check lands on the table's asset
(`warehouse/<table>`, and on `warehouse` when the code location predates the table assets).

While the run that wrote the interpretation is still going, the sensor waits (its cursor
does not move), so it reacts to the build's outcome rather than guessing it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from dagster import (
    AssetCheckEvaluation,
    AssetCheckSeverity,
    AssetKey,
    AssetObservation,
    DagsterInstance,
    DagsterRunStatus,
    DefaultSensorStatus,
    MetadataValue,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from dia_assets.agents.adaptation.drift import DriftReport, compare
from dia_assets.agents.adaptation.react import (
    FailCheck,
    Reaction,
    ReviewLine,
    RunJob,
    append_review,
    react,
)
from dia_assets.agents.adaptation.replan import saved_reads
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.dagster.resources.workspace import default_workspace
from dia_assets.dagster.sensors.jobs import build_job, quality_check_job, replan_job, schema_job
from dia_assets.dagster.sensors.settings import SENSOR_INTERVAL_S, drift_thresholds
from dia_assets.dagster.tables import WAREHOUSE, manifest_tables, table_key
from dia_assets.platform.files.discover import content_hash
from dia_assets.platform.files.object_store import ObjectStoreError
from dia_assets.platform.remote_workspace import DRIFT_FILES, sensor_edit
from dia_assets.platform.workspace import Workspace

FINISHED = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
JOBS = {"schema": schema_job.name, "checks": quality_check_job.name, "replan": replan_job.name}


def producing_build(instance: DagsterInstance) -> tuple[str | None, DagsterRunStatus | None]:
    """The job and status of the run that materialized the newest interpretation."""
    event = instance.get_latest_materialization_event(AssetKey("interpretation"))
    run = instance.get_run_by_id(event.run_id) if event and event.run_id else None
    return (run.job_name, run.status) if run else (None, None)


def run_requests(reactions: list[Reaction]) -> list[RunRequest]:
    """The RunJob reactions as Dagster run requests."""
    return [RunRequest(job_name=JOBS[r.job], run_key=r.run_key, tags=dict(r.tags), partition_key=r.partition)
            for r in reactions if isinstance(r, RunJob)]


def check_targets(fails: list[FailCheck], workspace: Path, loaded: set[AssetKey] | None) -> dict[tuple[AssetKey, str], list]:
    """(asset, check) -> the changes that fail it: the table's `warehouse/<table>` asset when the
    manifest has the table, and `warehouse` too when the code location predates the table assets
    (`loaded`: its asset keys; None: trust the manifest). The daemon reloads its code location now
    and then, so a location loaded before the first build may still be the one evaluating this
    sensor: the break is then visible on the asset that location shows and on the table asset
    the next reload shows."""
    by_source = {src: t.name for t in manifest_tables(workspace) for src in t.sources}
    out: dict[tuple[AssetKey, str], list] = {}
    for fail in fails:
        change = fail.change
        table = by_source.get(change.source)
        if table is None and loaded is not None and table_key(change.source) in loaded:
            table = change.source  # the location's table asset, though the manifest moved on
        targets = [table_key(table)] if table is not None else []
        if not targets or (loaded is not None and WAREHOUSE in loaded and targets[0] not in loaded):
            targets.append(WAREHOUSE)  # no table asset known, or a location from before the first build
        for key in targets:
            out.setdefault((key, fail.check), []).append(change)
    return out


def failed_checks(fails: list[FailCheck], workspace: Path, loaded: set[AssetKey] | None = None) -> list[AssetCheckEvaluation]:
    """Each FailCheck as a failed check on the affected table (or `warehouse`), with the offending
    rows of the last validation when it found them (the rejected build's report)."""
    offending = []
    path = Workspace(workspace).report
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
        offending = [k for k in data.get("key_validity", []) if not k.get("passed", True)]
    return [AssetCheckEvaluation(
        asset_key=key, check_name=check, passed=False,
        severity=AssetCheckSeverity.ERROR,
        description="; ".join(c.describe() for c in changes)[:2000],
        metadata={"drift": MetadataValue.json([c.model_dump() for c in changes]),
                  "offending": MetadataValue.json(offending)},
    ) for (key, check), changes in check_targets(fails, workspace, loaded).items()]


def failed_key_checks(report: DriftReport, workspace: Path, loaded: set[AssetKey] | None = None) -> list[AssetCheckEvaluation]:
    """key_validity fails on each table whose keys `report` breaks (react's FailChecks)."""
    return failed_checks([r for r in react(report, "", {}) if isinstance(r, FailCheck)], workspace, loaded)


@sensor(jobs=[schema_job, replan_job, quality_check_job], minimum_interval_seconds=SENSOR_INTERVAL_S,
        default_status=DefaultSensorStatus.RUNNING,
        description="Schema drift, distribution drift and key breakage between interpretations.")
def drift_sensor(context: SensorEvaluationContext) -> SensorResult | SkipReason:
    try:  # an s3:// workspace: the files a tick reads and writes, pulled and pushed around it
        with sensor_edit(default_workspace(), DRIFT_FILES, "drift") as workspace:
            return drift_tick(context, workspace)
    except ObjectStoreError as err:
        return SkipReason(str(err))


def drift_tick(context: SensorEvaluationContext, workspace: Path) -> SensorResult | SkipReason:
    """One tick of the drift sensor on a local workspace folder."""
    current_path, previous_path = Workspace(workspace).interpretation, Workspace(workspace).previous_interpretation
    if not current_path.exists():
        return SkipReason("no interpretation yet")
    version = content_hash(current_path)  # generated_at has one-second resolution
    if context.cursor == version:
        return SkipReason("no new interpretation")
    job, status = producing_build(context.instance)
    if job is not None and status not in FINISHED:
        return SkipReason(f"waiting for the {job} run that wrote the new interpretation to finish")
    current = Interpretation.read(current_path)
    previous_path.parent.mkdir(parents=True, exist_ok=True)
    if not previous_path.exists():
        shutil.copyfile(current_path, previous_path)
        return SensorResult(cursor=version)
    previous = Interpretation.read(previous_path)
    if Path(previous.data_dir).resolve() != Path(current.data_dir).resolve():
        # another data folder, not a drift of this one: nothing to compare it with yet
        shutil.copyfile(current_path, previous_path)
        return SensorResult(skip_reason=f"data folder changed: {previous.data_dir} -> {current.data_dir}; "
                            "nothing to compare with yet", cursor=version)
    report = compare(previous, current, drift_thresholds())
    if not report.any:
        shutil.copyfile(current_path, previous_path)
        return SensorResult(cursor=version)
    out = Workspace(workspace).drift_dir / f"{current.generated_at.replace(':', '-')}-{version[:8]}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    questions = set(context.instance.get_dynamic_partitions(replan_job.partitions_def.name))
    reactions = react(report, version, saved_reads(workspace),
                      rebuild_schema=not (job == build_job.name and status == DagsterRunStatus.SUCCESS),
                      questions=questions)
    requests = run_requests(reactions)
    events: list = [AssetObservation(
        asset_key="interpretation",
        metadata={
            "drift/changes": MetadataValue.json(json.loads(report.model_dump_json())["changes"]),
            "drift/summary": MetadataValue.md("\n".join(f"- {c.describe()}" for c in report.changes)),
            "drift/schema_changed": report.schema_changed,
            "drift/report": MetadataValue.path(str(out)),
            "drift/runs": MetadataValue.json([r.run_key for r in requests]),
        },
    )]
    fails = [r for r in reactions if isinstance(r, FailCheck)]
    if fails:
        repo = context.repository_def
        loaded = set(repo.asset_graph.get_all_asset_keys()) if repo is not None else None
        events.extend(failed_checks(fails, workspace, loaded))
    review = [r for r in reactions if isinstance(r, ReviewLine)]
    if review:
        context.log.warning(f"key drift: review item in {append_review(review, workspace, out)}")
    context.log.info(f"drift: {len(report.changes)} change(s); requesting {len(requests)} run(s)")
    shutil.copyfile(current_path, previous_path)  # last: a tick that fails before here is retried whole
    return SensorResult(run_requests=requests, asset_events=events, cursor=version)
