"""The reaction to one drift report, as plain data: jobs to run, checks to fail, review lines.

The drift sensor (dia_assets/dagster/sensors/drift_sensor.py) only translates these into Dagster run requests and
check evaluations, so every rule here is testable on plain values:

- any drift: the warehouse checks (`checks`, tagged with the affected tables) and a `replan` of
  each registered question whose last answer read an affected table or column (replan.py);
- schema change: `schema` too, unless the build that made the new interpretation already
  rebuilt the warehouse successfully (`rebuild_schema=False`);
- key break (kinds.KEY_KINDS): `key_validity` fails on the source's table and a review line asks
  an expert to decide the key (review/drift_review.md).

Falling answer quality (answer_quality.assess) re-answers the failed questions with fresh memory
(`react_to_quality`; dia_assets/dagster/sensors/quality_sensor.py translates).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from dia_assets.agents.adaptation.answer_quality import QualityVerdict
from dia_assets.agents.adaptation.drift import Change, DriftReport
from dia_assets.agents.adaptation.kinds import KEY_KINDS
from dia_assets.agents.adaptation.replan import Reads, replan_partitions
from dia_assets.platform.workspace import Workspace

Job = Literal["schema", "checks", "replan"]  # the sensor maps them to schema_job, quality_check_job, query_job
KEY_CHECK = "key_validity"  # the warehouse check a key break fails (schema_assets)
REVIEW_HEADER = ("# Drift to review\n\nKeys the new data breaks. The previous key stays (key_validity fails) "
                 "until you set `primary_key` or a foreign key in review/interpretation_overrides.yaml.\n")


@dataclass(frozen=True)
class RunJob:
    """Run `job` (for question `partition` when it is `replan`) under `run_key`: one key per
    interpretation version, so a tick evaluated twice asks for the same run."""

    job: Job
    run_key: str
    tags: dict[str, str] = field(default_factory=dict)
    partition: str | None = None


@dataclass(frozen=True)
class FailCheck:
    """Fail `check` on the warehouse table built from `change.source`."""

    check: str
    change: Change


@dataclass(frozen=True)
class ReviewLine:
    """One line for an expert in review/drift_review.md."""

    text: str


Reaction = RunJob | FailCheck | ReviewLine


def key_breaks(report: DriftReport) -> list[Change]:
    return [c for c in report.changes if c.kind in KEY_KINDS]


def react(report: DriftReport, version: str, answers: dict[str, Reads], rebuild_schema: bool = True,
          questions: set[str] | None = None) -> list[Reaction]:
    """The reactions to `report` (see the module docstring), in the order they are requested.
    `version`: the new interpretation's content hash (run keys carry its first 16 characters);
    `answers`: question id -> what its last answer read (replan.saved_reads); `questions`: the
    registered question ids (an answer whose id is not one is not re-run: a run request for an
    unknown partition fails the whole tick); None: every answer's."""
    if not report.any:
        return []
    tag = version[:16]
    affected = report.affected()
    kinds = ",".join(sorted({c.kind for c in report.changes}))[:200]
    out: list[Reaction] = []
    if report.schema_changed and rebuild_schema:
        out.append(RunJob("schema", f"drift-schema-{tag}", {"dia/trigger": "schema drift", "dia/drift": kinds}))
    out.append(RunJob("checks", f"drift-check-{tag}", {"dia/trigger": "drift", "dia/drift": kinds,
                                                        "dia/tables": ",".join(sorted(affected))[:200]}))
    for qid in replan_partitions(answers, affected):
        if questions is None or qid in questions:
            out.append(RunJob("replan", f"drift-replan-{tag}-{qid}", {"dia/trigger": "drift", "dia/drift": kinds},
                              partition=qid))
    breaks = key_breaks(report)
    out += [FailCheck(KEY_CHECK, c) for c in breaks]
    out += [ReviewLine(f"- [ ] {c.describe()}") for c in breaks]
    return out


def append_review(lines: list[ReviewLine], workspace: Path, drift_file: Path) -> Path:
    """Append the review lines under a dated heading naming the drift report; the file starts
    with a header saying what to do."""
    out = Workspace(workspace).drift_review
    out.parent.mkdir(parents=True, exist_ok=True)
    text = [] if out.exists() else [REVIEW_HEADER]
    text.append(f"\n## {datetime.now(UTC).isoformat(timespec='seconds')} ({drift_file.name})\n")
    text += [line.text for line in lines]
    with out.open("a", encoding="utf-8") as fh:
        fh.write("\n".join(text) + "\n")
    return out


def react_to_quality(verdict: QualityVerdict, newest: int) -> list[Reaction]:
    """Re-answer each failed question of a degraded verdict, recalling memory afresh. `newest`:
    the storage id of the newest answer looked at (one run per question and look)."""
    if not verdict.degraded:
        return []
    return [RunJob("replan", f"quality-{newest}-{p}", {"dia/trigger": "quality", "dia/fresh_memory": "true"},
                   partition=p) for p in verdict.failed_partitions]


def quality_diagnosis(verdict: QualityVerdict, workspace: Path) -> str:
    """Which tables changed lately and which questions failed: where to look first."""
    lines = ["# Answer quality fell", "", verdict.reason, "", "## Failed questions", ""]
    lines += [f"- {p}" for p in verdict.failed_partitions] or ["- none"]
    drift = sorted(Workspace(workspace).drift_dir.glob("*.json"))
    lines += ["", "## Latest drift", ""]
    if drift:
        report = DriftReport.model_validate_json(drift[-1].read_text(encoding="utf-8"))
        lines += [f"- {c.kind} {c.source}.{c.column or '*'}" for c in report.changes]
    else:
        lines.append("- no drift recorded: the data did not change; suspect the model or memory")
    lines += ["", "Lessons whose probes no longer hold are refused at recall time and show in each "
              "question's trace.json (memory_used)."]
    return "\n".join(lines) + "\n"
