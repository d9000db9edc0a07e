"""Compare each new interpretation with the one before it, and react to what moved."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from dagster import (
    AssetKey,
    AssetObservation,
    DagsterInstance,
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
from resources.workspace import default_workspace
from sensors.jobs import build_job, replan_job, schema_job
from sensors.settings import SENSOR_INTERVAL_S, drift_thresholds


def saved_queries(workspace: Path) -> dict[str, str]:
    """question id -> the SQL its last answer used."""
    root = workspace / "queries"
    return {p.parent.name: p.read_text(encoding="utf-8") for p in sorted(root.glob("*/query.sql"))}


def built_with_schema(instance: DagsterInstance) -> bool:
    """The newest interpretation came from build_job, which rebuilds the schema anyway."""
    event = instance.get_latest_materialization_event(AssetKey("interpretation"))
    run = instance.get_run_by_id(event.run_id) if event else None
    return bool(run and run.job_name == build_job.name)


def react(report: DriftReport, workspace: Path, version: str, rebuild_schema: bool = True) -> list[RunRequest]:
    """A schema change rebuilds the schema (unless a build already does); any drift
    re-answers exactly the touched questions."""
    requests = []
    breaking = report.schema_changed or any(c.kind == "primary_key_broken" for c in report.changes)
    if breaking and rebuild_schema:
        requests.append(RunRequest(job_name=schema_job.name, run_key=f"drift-schema-{version[:16]}",
                                   tags={"dia/trigger": "schema drift"}))
    for pid in affected_partitions(saved_queries(workspace), report.affected()):
        requests.append(RunRequest(job_name=replan_job.name, partition_key=pid,
                                   run_key=f"drift-replan-{version[:16]}-{pid}", tags={"dia/trigger": "drift"}))
    return requests


@sensor(jobs=[schema_job, replan_job], minimum_interval_seconds=SENSOR_INTERVAL_S,
        default_status=DefaultSensorStatus.RUNNING,
        description="Schema drift, distribution drift and key breakage between interpretations.")
def drift_sensor(context: SensorEvaluationContext) -> SensorResult | SkipReason:
    workspace = Path(default_workspace())
    current_path = workspace / "interpretation.json"
    previous_path = workspace / "history" / "interpretation.previous.json"
    if not current_path.exists():
        return SkipReason("no interpretation yet")
    version = content_hash(current_path)  # generated_at has one-second resolution
    if context.cursor == version:
        return SkipReason("no new interpretation")
    current = Interpretation.read(current_path)
    previous_path.parent.mkdir(parents=True, exist_ok=True)
    if not previous_path.exists():
        shutil.copyfile(current_path, previous_path)
        return SensorResult(cursor=version)
    report = compare(Interpretation.read(previous_path), current, drift_thresholds())
    shutil.copyfile(current_path, previous_path)
    if not report.any:
        return SensorResult(cursor=version)
    out = workspace / "drift" / f"{current.generated_at.replace(':', '-')}-{version[:8]}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    requests = react(report, workspace, version, rebuild_schema=not built_with_schema(context.instance))
    context.log.info(f"drift: {len(report.changes)} change(s); requesting {len(requests)} run(s)")
    observation = AssetObservation(
        asset_key="interpretation",
        metadata={
            "drift/changes": MetadataValue.json(json.loads(report.model_dump_json())["changes"]),
            "drift/summary": MetadataValue.md("\n".join(f"- {c.describe()}" for c in report.changes)),
            "drift/schema_changed": report.schema_changed,
            "drift/report": MetadataValue.path(str(out)),
        },
    )
    return SensorResult(run_requests=requests, asset_events=[observation], cursor=version)
