"""Watch answer quality in the Dagster instance and replan when it falls (the decision and the
reaction are agents/adaptation's; this sensor reads the instance and translates)."""

from __future__ import annotations

from dagster import (
    AssetKey,
    DagsterInstance,
    DefaultSensorStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    sensor,
)

from dia_assets.agents.adaptation.answer_quality import AnswerRecord, assess
from dia_assets.agents.adaptation.react import RunJob, quality_diagnosis, react_to_quality
from dia_assets.dagster.resources.workspace import default_workspace
from dia_assets.dagster.sensors.jobs import replan_job
from dia_assets.dagster.sensors.settings import QUALITY_BASELINE, QUALITY_MARGIN, QUALITY_WINDOW
from dia_assets.platform.files.object_store import ObjectStoreError
from dia_assets.platform.remote_workspace import QUALITY_FILES, sensor_edit
from dia_assets.platform.workspace import Workspace


def recent_answers(instance: DagsterInstance, limit: int) -> tuple[list[AnswerRecord], int]:
    """query_result materializations, oldest first, with the newest storage id."""
    result = instance.fetch_materializations(AssetKey("query_result"), limit=limit)
    records, newest = [], 0
    for rec in result.records:
        mat = rec.asset_materialization
        if mat is None:
            continue
        meta = {k: getattr(v, "value", v) for k, v in mat.metadata.items()}
        records.append(AnswerRecord(
            partition=mat.partition or "?", status=str(meta.get("status", "failed")),
            verified=bool(meta.get("verification_passed", False)), attempts=int(meta.get("attempts", 1) or 1),
            latency_s=float(meta.get("latency_s", 0.0) or 0.0), timestamp=rec.timestamp,
        ))
        newest = max(newest, rec.storage_id)
    return records, newest


@sensor(job=replan_job, minimum_interval_seconds=60, default_status=DefaultSensorStatus.RUNNING,
        description="Answer success or verification rate below its trailing baseline re-answers the failures.")
def quality_sensor(context: SensorEvaluationContext) -> SensorResult | SkipReason:
    records, newest = recent_answers(context.instance, QUALITY_WINDOW + QUALITY_BASELINE)
    if not records:
        return SkipReason("no answers recorded yet")
    if context.cursor and int(context.cursor) >= newest:
        return SkipReason("no new answers since the last look")
    verdict = assess(records, QUALITY_WINDOW, QUALITY_BASELINE, QUALITY_MARGIN)
    if not verdict.degraded:
        return SensorResult(cursor=str(newest))
    try:  # an s3:// workspace: the drift reports read, the diagnosis written, through the bucket
        with sensor_edit(default_workspace(), QUALITY_FILES, "quality") as workspace:
            out = Workspace(workspace).diagnosis_dir / f"quality-{newest}.md"
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(quality_diagnosis(verdict, workspace), encoding="utf-8")
    except ObjectStoreError as err:
        return SkipReason(str(err))
    context.log.warning(f"answer quality fell ({verdict.reason}); diagnosis in {out}")
    return SensorResult(
        run_requests=[RunRequest(partition_key=r.partition, run_key=r.run_key, tags=dict(r.tags))
                      for r in react_to_quality(verdict, newest) if isinstance(r, RunJob)],
        cursor=str(newest),
    )
