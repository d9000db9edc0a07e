"""What became of a run the data sensor requested, read from the Dagster instance.

Runs are found by their `dia/request` tag (the change's key, the same on every retry). A run
that Dagster still shows in progress while its process is gone (the daemon and the run were
killed together, so nothing marked it failed) is marked failed here: it would otherwise hold
the one writer slot (`dia/workspace=writer`) for ever. Its process is named by the workspace's
attempt record, or, when the run died before its first step wrote one, by the pid Dagster's
run worker logs at start (dia_assets/dagster/launcher.py, which also lets Dagster's run
monitoring fail such runs, whatever asked for them; this check reacts on the sensor's next tick).
"""

from __future__ import annotations

from pathlib import Path

from dagster import (
    DagsterEventType,
    DagsterInstance,
    DagsterRun,
    DagsterRunStatus,
    RunsFilter,
)

from dia_assets.agents.adaptation.data_cursor import Pending, RunOutcome
from dia_assets.agents.schema_creator.attempt import interrupted, read_attempt
from dia_assets.dagster.launcher import worker_gone
from dia_assets.dagster.schema import VERDICT_KEY

REQUEST_TAG = "dia/request"
CHECK_FAILED = "DagsterAssetCheckFailedError"  # a blocking asset check failed: its step fails with this
IN_PROGRESS = {DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.MANAGED,
               DagsterRunStatus.STARTING, DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING}


def refused(instance: DagsterInstance, run: DagsterRun) -> bool:
    """The run failed because the data was checked and found wanting (a verdict on the data):
    the warehouse step refused the build, or a blocking warehouse check failed."""
    for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.STEP_FAILURE):
        event = entry.dagster_event
        data = event.step_failure_data if event is not None else None
        if data is None:
            continue
        meta = data.user_failure_data.metadata if data.user_failure_data else {}
        if getattr(meta.get(VERDICT_KEY), "value", None) == "not_accepted":
            return True
        if data.error is not None and data.error.cls_name == CHECK_FAILED:
            return True
    return False


def killed(instance: DagsterInstance, run: DagsterRun, workspace: Path) -> str | None:
    """Why a run shown in progress is dead: from the attempt record it keeps in the workspace,
    or from its worker's pid when it died before writing one."""
    attempt = read_attempt(workspace)
    if attempt is not None and attempt.attempt_id == run.run_id:
        why = interrupted(attempt)
    else:
        pid = worker_gone(instance, run)
        why = f"its run worker (pid {pid}) ended before the build recorded its first step" if pid else None
    if not why:
        return None
    current = instance.get_run_by_id(run.run_id)  # the code server may have just marked it (it saw the kill)
    if current is not None and current.status in (DagsterRunStatus.STARTING, DagsterRunStatus.STARTED,
                                                  DagsterRunStatus.CANCELING):
        instance.report_run_failed(current, message=f"DIA: the run's process is gone ({why})")
    return why


def run_outcome(instance: DagsterInstance, pending: Pending, workspace: Path) -> RunOutcome:
    runs = instance.get_runs(filters=RunsFilter(tags={REQUEST_TAG: pending.key}), limit=1)  # newest first
    if not runs:
        return "gone"
    run = runs[0]
    if run.status == DagsterRunStatus.SUCCESS:
        return "success"
    if run.status in IN_PROGRESS:
        return "gone" if killed(instance, run, workspace) else "running"
    return "checked" if refused(instance, run) else "failed"
