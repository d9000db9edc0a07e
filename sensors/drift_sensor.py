"""Compare each new interpretation with the one before it, and react to what moved.

Every drift gets a reaction the UI shows, so a tick that detects drift is never SKIPPED:

- any drift: an `AssetObservation` on `interpretation`, `drift/<time>.json`, a
  `quality_check_job` run (the warehouse checks, tagged with the affected tables) and a
  `query_job` run per saved answer whose SQL reads an affected table or column;
- schema change: `schema_job` too, unless the `build_job` run that made this interpretation
  already rebuilt the warehouse successfully;
- key break (primary key no longer holding, foreign-key coverage falling, exact duplicates
  growing in a keyed table): a failed `key_validity` check evaluation on the table (`warehouse/<table>`,
  and on `warehouse` when the code location predates the table assets) and an item in
  `review/drift_review.md`.

While the run that wrote the interpretation is still going, the sensor waits (its cursor
does not move), so it reacts to the build's outcome rather than guessing it.
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
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
from dia_assets.agents.adaptation.replan import affected_partitions
from dia_assets.agents.interpreter.discover import content_hash
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.platform.workspace import Workspace
from dia_assets.resources.workspace import default_workspace
from dia_assets.sensors.jobs import build_job, quality_check_job, replan_job, schema_job
from dia_assets.sensors.settings import SENSOR_INTERVAL_S, drift_thresholds
from dia_assets.table_specs import WAREHOUSE, manifest_tables, table_key

KEY_KINDS = {"primary_key_broken", "fk_coverage_drop", "duplicate_rows_grew"}
FINISHED = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}


def saved_queries(workspace: Path) -> dict[str, str]:
    """question id -> the SQL its last answer used."""
    root = Workspace(workspace).queries_dir
    return {p.parent.name: p.read_text(encoding="utf-8") for p in sorted(root.glob("*/query.sql"))}


def producing_build(instance: DagsterInstance) -> tuple[str | None, DagsterRunStatus | None]:
    """The job and status of the run that materialized the newest interpretation."""
    event = instance.get_latest_materialization_event(AssetKey("interpretation"))
    run = instance.get_run_by_id(event.run_id) if event and event.run_id else None
    return (run.job_name, run.status) if run else (None, None)


def built_with_schema(instance: DagsterInstance) -> bool:
    """The newest interpretation came from a build_job run that rebuilt the warehouse."""
    job, status = producing_build(instance)
    return job == build_job.name and status == DagsterRunStatus.SUCCESS


def key_breaks(report: DriftReport) -> list:
    return [c for c in report.changes if c.kind in KEY_KINDS]


def react(report: DriftReport, workspace: Path, version: str, rebuild_schema: bool = True,
          questions: set[str] | None = None) -> list[RunRequest]:
    """The runs one drift report asks for (see the module docstring). `questions`: the
    registered question partitions; a saved answer whose id is not one is not re-run (a run
    request for an unknown partition fails the whole tick)."""
    tag = version[:16]
    affected = report.affected()
    kinds = ",".join(sorted({c.kind for c in report.changes}))[:200]
    requests = []
    if report.schema_changed and rebuild_schema:
        requests.append(RunRequest(job_name=schema_job.name, run_key=f"drift-schema-{tag}",
                                   tags={"dia/trigger": "schema drift", "dia/drift": kinds}))
    requests.append(RunRequest(job_name=quality_check_job.name, run_key=f"drift-check-{tag}",
                               tags={"dia/trigger": "drift", "dia/drift": kinds,
                                     "dia/tables": ",".join(sorted(affected))[:200]}))
    for pid in affected_partitions(saved_queries(workspace), affected):
        if questions is not None and pid not in questions:
            continue
        requests.append(RunRequest(job_name=replan_job.name, partition_key=pid,
                                   run_key=f"drift-replan-{tag}-{pid}", tags={"dia/trigger": "drift", "dia/drift": kinds}))
    return requests


def check_targets(report: DriftReport, workspace: Path, loaded: set[AssetKey] | None) -> dict[AssetKey, list]:
    """The assets whose key_validity the breaks fail: the table's `warehouse/<table>` asset when the
    manifest has the table, and `warehouse` too when the code location predates the table assets
    (`loaded`: its asset keys; None: trust the manifest). The daemon reloads its code location now
    and then, so a location loaded before the first build may still be the one evaluating this
    sensor: the break is then visible on the asset that location shows and on the table asset
    the next reload shows."""
    by_source = {src: t.name for t in manifest_tables(workspace) for src in t.sources}
    out: dict[AssetKey, list] = {}
    for change in key_breaks(report):
        table = by_source.get(change.source)
        if table is None and loaded is not None and table_key(change.source) in loaded:
            table = change.source  # the location's table asset, though the manifest moved on
        targets = [table_key(table)] if table is not None else []
        if not targets or (loaded is not None and WAREHOUSE in loaded and targets[0] not in loaded):
            targets.append(WAREHOUSE)  # no table asset known, or a location from before the first build
        for key in targets:
            out.setdefault(key, []).append(change)
    return out


def failed_key_checks(report: DriftReport, workspace: Path, loaded: set[AssetKey] | None = None) -> list[AssetCheckEvaluation]:
    """key_validity fails on each affected table (or `warehouse`), with the offending rows of the
    last validation when it found them (the rejected build's report)."""
    offending = []
    path = Workspace(workspace).report
    if path.exists():
        data = json.loads(path.read_text(encoding="utf-8"))
        offending = [k for k in data.get("key_validity", []) if not k.get("passed", True)]
    return [AssetCheckEvaluation(
        asset_key=key, check_name="key_validity", passed=False,
        severity=AssetCheckSeverity.ERROR,
        description="; ".join(c.describe() for c in changes)[:2000],
        metadata={"drift": MetadataValue.json([c.model_dump() for c in changes]),
                  "offending": MetadataValue.json(offending)},
    ) for key, changes in check_targets(report, workspace, loaded).items()]


def write_review_item(report: DriftReport, workspace: Path, drift_file: Path) -> Path:
    """Append the key breaks to review/drift_review.md: an expert decides the key."""
    out = Workspace(workspace).drift_review
    out.parent.mkdir(parents=True, exist_ok=True)
    lines = [] if out.exists() else ["# Drift to review\n\nKeys the new data breaks. The previous key stays "
                                     "(key_validity fails) until you set `primary_key` or a foreign key in "
                                     "review/interpretation_overrides.yaml.\n"]
    lines.append(f"\n## {datetime.now(UTC).isoformat(timespec='seconds')} ({drift_file.name})\n")
    lines += [f"- [ ] {c.describe()}" for c in key_breaks(report)]
    with out.open("a", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return out


@sensor(jobs=[schema_job, replan_job, quality_check_job], minimum_interval_seconds=SENSOR_INTERVAL_S,
        default_status=DefaultSensorStatus.RUNNING,
        description="Schema drift, distribution drift and key breakage between interpretations.")
def drift_sensor(context: SensorEvaluationContext) -> SensorResult | SkipReason:
    workspace = Path(default_workspace())
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
    requests = react(report, workspace, version,
                     rebuild_schema=not (job == build_job.name and status == DagsterRunStatus.SUCCESS),
                     questions=questions)
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
    if key_breaks(report):
        repo = context.repository_def
        loaded = set(repo.asset_graph.get_all_asset_keys()) if repo is not None else None
        events.extend(failed_key_checks(report, workspace, loaded))
        review = write_review_item(report, workspace, out)
        context.log.warning(f"key drift: review item in {review}")
    context.log.info(f"drift: {len(report.changes)} change(s); requesting {len(requests)} run(s)")
    shutil.copyfile(current_path, previous_path)  # last: a tick that fails before here is retried whole
    return SensorResult(run_requests=requests, asset_events=events, cursor=version)
