"""Dagster's default run launcher, with the worker health check its run monitoring needs.

With the default launcher, Dagster's run monitoring cannot tell whether a started run's worker
is still alive, so a run whose process died with the daemon and its code server stays STARTED
for ever. For any asset with an eager automation condition that is worse than a failed run:
`~in_progress` stays false, and the asset is never launched again (the catalog kept a retired
table after a crash, issue 26). This launcher answers the health check from the pid the worker
logs at start ("Started process for run"), but only for a code server on this host; for one on
another host it cannot tell and says RUNNING, as the default launcher's silence did.
"""

from __future__ import annotations

import socket

from dagster import DagsterEventType, DagsterInstance, DagsterRun
from dagster._core.launcher import CheckRunHealthResult, DefaultRunLauncher, WorkerStatus
from dagster._core.remote_origin import (
    GrpcServerCodeLocationOrigin,
    InProcessCodeLocationOrigin,
    ManagedGrpcPythonEnvCodeLocationOrigin,
)

from dia_assets.agents.schema_creator.attempt import process_gone

WORKER_STARTED = "Started process for run"  # the run worker's first engine event, with its pid
LOOPBACK = {"localhost", "127.0.0.1", "::1"}


def worker_pid(instance: DagsterInstance, run: DagsterRun) -> tuple[int, float] | None:
    """The pid of the run's worker process and when it was logged (None: no worker started yet)."""
    for entry in instance.all_logs(run.run_id, of_type=DagsterEventType.ENGINE_EVENT):
        event = entry.dagster_event
        if event is None or not (event.message or "").startswith(WORKER_STARTED):
            continue  # other engine events name step processes, which end while the run goes on
        pid = event.engine_event_data.metadata.get("pid")
        if pid is not None and str(pid.value).isdigit():
            return int(pid.value), entry.timestamp
    return None


def served_here(run: DagsterRun) -> bool:
    """Whether the run's code server, which starts its worker, runs on this host."""
    origin = run.remote_job_origin
    location = origin.repository_origin.code_location_origin if origin is not None else None
    if isinstance(location, (ManagedGrpcPythonEnvCodeLocationOrigin, InProcessCodeLocationOrigin)):
        return True  # started by this host's webserver or daemon
    if isinstance(location, GrpcServerCodeLocationOrigin):
        return location.host in LOOPBACK | {socket.gethostname()}
    return False


def worker_gone(instance: DagsterInstance, run: DagsterRun) -> int | None:
    """The pid of the run's worker when it has ended (None: alive, not started, or another
    launcher). Call it on the host of the run's code server (a sensor of its code location)."""
    if not isinstance(instance.run_launcher, DefaultRunLauncher):
        return None
    worker = worker_pid(instance, run)
    return worker[0] if worker is not None and process_gone(*worker) else None


class LocalRunLauncher(DefaultRunLauncher):
    """The default launcher; run monitoring fails a started run whose worker process is gone."""

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        pid = worker_gone(self._instance, run) if served_here(run) else None
        if pid is None:
            return CheckRunHealthResult(WorkerStatus.RUNNING)
        return CheckRunHealthResult(WorkerStatus.NOT_FOUND, f"the run worker (pid {pid}) is gone")
