"""Issue 26: a run whose worker died with the daemon is failed by Dagster's run monitoring.

With Dagster's default launcher such a run stays STARTED for ever, and an asset with an eager
automation condition (`semantic_catalog`) is never launched again (`~in_progress`): the catalog
kept a retired table after a crash in the live replay. DIA's launcher answers the health check
from the worker's pid. Each test drives Dagster's own monitoring step on a real instance."""

from __future__ import annotations

import logging
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from dagster import DagsterInstance, DagsterRun, DagsterRunStatus
from dagster._core.events import EngineEventData
from dagster._core.remote_origin import (
    GrpcServerCodeLocationOrigin,
    ManagedGrpcPythonEnvCodeLocationOrigin,
    RemoteJobOrigin,
    RemoteRepositoryOrigin,
)
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._daemon.monitoring.run_monitoring import monitor_started_run

from dia_assets.dagster.instance import DAGSTER_YAML
from dia_assets.dagster.launcher import WORKER_STARTED, LocalRunLauncher

HERE = ManagedGrpcPythonEnvCodeLocationOrigin(
    LoadableTargetOrigin(executable_path=sys.executable, module_name="dia_assets.definitions"), location_name="dia")
ELSEWHERE = GrpcServerCodeLocationOrigin(host="code-server.internal", port=4000, location_name="dia")


@pytest.fixture
def instance(tmp_path: Path) -> Iterator[DagsterInstance]:
    (tmp_path / "dagster.yaml").write_text(DAGSTER_YAML)  # the instance `dia ui` and make write
    with DagsterInstance.from_ref(DagsterInstance.local_temp(str(tmp_path)).get_ref()) as inst:
        yield inst


def started_run(instance: DagsterInstance, pid: int, where=HERE) -> DagsterRun:
    """A catalog run as the automation sensor launches it, STARTED, whose worker logged `pid`."""
    origin = RemoteJobOrigin(RemoteRepositoryOrigin(where, "__repository__"), "__ASSET_JOB")
    run = instance.add_run(DagsterRun(job_name="__ASSET_JOB", run_id=str(uuid.uuid4()),
                                      status=DagsterRunStatus.STARTED, remote_job_origin=origin))
    instance.report_engine_event(f"{WORKER_STARTED} (pid: {pid}).", run, EngineEventData.in_process(pid))
    return run


def monitor(instance: DagsterInstance, run: DagsterRun) -> DagsterRunStatus:
    [record] = instance.get_run_records(filters=None, limit=1)
    assert record.dagster_run.run_id == run.run_id
    monitor_started_run(instance, None, record, logging.getLogger("test"))  # no resume: no workspace needed
    return instance.get_run_by_id(run.run_id).status


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_the_instance_dia_writes_uses_the_launcher_that_checks_workers(instance: DagsterInstance):
    assert isinstance(instance.run_launcher, LocalRunLauncher) and instance.run_monitoring_enabled


def test_a_started_run_whose_worker_is_gone_is_failed_naming_the_pid(instance: DagsterInstance):
    pid = dead_pid()
    run = started_run(instance, pid)
    assert monitor(instance, run) == DagsterRunStatus.FAILURE
    messages = [e.message for e in instance.all_logs(run.run_id)]
    assert any(f"the run worker (pid {pid}) is gone" in (m or "") for m in messages)


def test_a_started_run_whose_worker_runs_is_left_alone(instance: DagsterInstance):
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert monitor(instance, started_run(instance, worker.pid)) == DagsterRunStatus.STARTED
    finally:
        worker.kill()
        worker.wait()


def test_a_worker_on_another_hosts_code_server_cannot_be_judged_from_here(instance: DagsterInstance):
    assert monitor(instance, started_run(instance, dead_pid(), ELSEWHERE)) == DagsterRunStatus.STARTED


def test_dagsters_default_launcher_leaves_the_dead_run_started(tmp_path: Path):
    """What the launcher is for: without it the run never leaves STARTED."""
    with DagsterInstance.local_temp(str(tmp_path)) as plain:
        assert monitor(plain, started_run(plain, dead_pid())) == DagsterRunStatus.STARTED
