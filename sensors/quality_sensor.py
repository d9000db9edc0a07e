"""Watch answer quality in the Dagster instance and replan when it falls."""

from __future__ import annotations

import json
from pathlib import Path

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

from dia_assets.agents.adaptation.answer_quality import AnswerRecord, QualityVerdict, assess
from dia_assets.platform.workspace import Workspace
from dia_assets.resources.workspace import default_workspace
from dia_assets.sensors.jobs import replan_job
from dia_assets.sensors.settings import QUALITY_BASELINE, QUALITY_MARGIN, QUALITY_WINDOW


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


def diagnosis(verdict: QualityVerdict, workspace: Path) -> str:
    """Which tables changed lately and which questions failed: where to look first."""
    lines = ["# Answer quality fell", "", verdict.reason, "", "## Failed questions", ""]
    lines += [f"- {p}" for p in verdict.failed_partitions] or ["- none"]
    drift = sorted(Workspace(workspace).drift_dir.glob("*.json"))
    lines += ["", "## Latest drift", ""]
    if drift:
        report = json.loads(drift[-1].read_text())
        lines += [f"- {c['kind']} {c['source']}.{c.get('column') or '*'}" for c in report["changes"]]
    else:
        lines.append("- no drift recorded: the data did not change; suspect the model or memory")
    lines += ["", "Lessons whose probes no longer hold are refused at recall time and show in each "
              "question's trace.json (memory_used)."]
    return "\n".join(lines) + "\n"


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
    workspace = Path(default_workspace())
    out = Workspace(workspace).diagnosis_dir / f"quality-{newest}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(diagnosis(verdict, workspace), encoding="utf-8")
    context.log.warning(f"answer quality fell ({verdict.reason}); diagnosis in {out}")
    return SensorResult(
        run_requests=[
            RunRequest(partition_key=p, run_key=f"quality-{newest}-{p}",
                       tags={"dia/trigger": "quality", "dia/fresh_memory": "true"})
            for p in verdict.failed_partitions
        ],
        cursor=str(newest),
    )
