"""What became of a run the data sensor requested, read from the Dagster instance.

Runs are found by their `dia/request` tag (the change's key, the same on every retry). A run
that Dagster still shows in progress while its process is gone (the daemon and the run were
killed together, so nothing marked it failed) is marked failed here: it would otherwise hold
the one writer slot (`dia/workspace=writer`) for ever. Its process is named by the workspace's
attempt record, or, when the run died before its first step wrote one, by the pid Dagster's
run worker logs at start ("Started process for run"); that pid is only read with Dagster's
default run launcher, whose workers run on the code server's host. Dagster's own run monitoring
(dagster.yaml `run_monitoring`) fails a run stuck before its worker started (start timeout);
with the default launcher it cannot tell whether a started worker is still alive.
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
from dia_assets.agents.schema_creator.attempt import interrupted, process_gone, read_attempt
from dia_assets.dagster.schema import VERDICT_KEY

REQUEST_TAG = "dia/request"
WORKER_STARTED = "Started process for run"  # the run worker's first engine event, with its pid
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


def worker_pid(instance: DagsterInstance, run: DagsterRun) -> tuple[int, float] | None:
    """The pid of the run's worker process and when it was logged, from the engine events of
    Dagster's default run launcher (None: another launcher, or no worker started yet)."""
    from dagster._core.launcher import DefaultRunLauncher

    if not isinstance(instance.run_launcher, DefaultRunLauncher):
        return None
    for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.ENGINE_EVENT):
        event = entry.dagster_event
        if event is None or not (event.message or "").startswith(WORKER_STARTED):
            continue  # other engine events name step processes, which end while the run goes on
        pid = event.engine_event_data.metadata.get("pid")
        if pid is not None and str(pid.value).isdigit():
            return int(pid.value), entry.timestamp
    return None


def killed(instance: DagsterInstance, run: DagsterRun, workspace: Path) -> str | None:
    """Why a run shown in progress is dead: from the attempt record it keeps in the workspace,
    or from its worker's pid when it died before writing one."""
    attempt = read_attempt(workspace)
    if attempt is not None and attempt.attempt_id == run.run_id:
        why = interrupted(attempt)
    else:
        worker = worker_pid(instance, run)
        why = (f"its run worker (pid {worker[0]}) ended before the build recorded its first step"
               if worker is not None and process_gone(*worker) else None)
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
