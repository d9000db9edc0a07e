"""Issue 26: the data sensor reads no file that is still being written, and moves past a change
only when the run requested for it finished its checks. Evaluated against real (ephemeral)
Dagster instances, with real runs of small jobs for each way a run can end."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dagster import (
    AddDynamicPartitionsRequest,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    DagsterInstance,
    DagsterRunStatus,
    Failure,
    MaterializeResult,
    SensorResult,
    SkipReason,
    asset,
    build_sensor_context,
    job,
    materialize,
    op,
)
from dagster._core.events import EngineEventData
from dagster._core.test_utils import create_run_for_test, instance_for_test

from dia_assets.agents.adaptation.data_cursor import DataCursor
from dia_assets.contracts.attempt import BuildAttempt
from dia_assets.dagster.schema import VERDICT_KEY
from dia_assets.dagster.sensors.data_sensors import new_data_sensor
from dia_assets.dagster.sensors.run_outcome import REQUEST_TAG


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    data, ws = tmp_path / "data", tmp_path / "ws"
    data.mkdir()
    monkeypatch.setenv("DIA_DATA_DIR", str(data))
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    monkeypatch.setenv("DIA_SETTLE_S", "0")
    monkeypatch.setenv("DIA_BUILD_TRIES", "2")
    return data, ws


def tick(instance: DagsterInstance, cursor: str | None) -> SensorResult | SkipReason:
    """One evaluation, with what the daemon does with its partition requests and observations."""
    out = new_data_sensor(build_sensor_context(instance=instance, cursor=cursor))
    if isinstance(out, SensorResult):
        for req in out.dynamic_partitions_requests or []:
            if isinstance(req, AddDynamicPartitionsRequest):
                instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
            else:
                for key in req.partition_keys:
                    instance.delete_dynamic_partition(req.partitions_def_name, key)
        for event in out.asset_events or []:
            instance.report_runless_asset_event(event)
    return out


def skipped(out: SensorResult | SkipReason) -> str:
    """Why a tick requested nothing (a SensorResult that stores a cursor carries its reason too)."""
    assert not getattr(out, "run_requests", None)
    return out.skip_message if isinstance(out, SkipReason) else out.skip_reason.skip_message


@op
def fine() -> None:
    pass


@op
def crash() -> None:
    raise RuntimeError("Conversion Error: Could not convert string 'T1' to INT32")


@op
def refuse() -> None:
    raise Failure(description="the new build is not accepted", metadata={VERDICT_KEY: "not_accepted"})


@job
def fine_job() -> None:
    fine()


@job
def crash_job() -> None:
    crash()


@job
def refuse_job() -> None:
    refuse()


JOBS = {"fine": fine_job, "crash": crash_job, "refuse": refuse_job}


def run_as(instance: DagsterInstance, result: SensorResult, how: str) -> None:
    """Run the request's stand-in job with its tags, as the daemon would launch it."""
    [req] = result.run_requests
    JOBS[how].execute_in_process(instance=instance, tags=req.tags, raise_on_error=False)


def test_a_file_being_written_waits_until_it_settles(env, monkeypatch):
    data, _ = env
    monkeypatch.setenv("DIA_SETTLE_S", "0.5")
    instance = DagsterInstance.ephemeral()
    path = data / "orders.csv"
    path.write_text("id,total\n1,5\n2,2")  # half of `2,2064`
    first = tick(instance, None)
    assert not first.asset_events and not first.dynamic_partitions_requests
    assert "orders.csv" in skipped(first) and "settle" in skipped(first)
    assert "orders.csv" not in DataCursor.parse(first.cursor).done  # the cursor did not move past it
    with path.open("a") as fh:  # the writer goes on
        fh.write("064\n3,7\n")
    second = tick(instance, first.cursor)
    assert "orders.csv" in skipped(second)
    # unchanged across two ticks, settle time apart: read now, complete
    time.sleep(0.6)
    third = tick(instance, second.cursor)
    assert isinstance(third, SensorResult) and len(third.run_requests) == 1
    assert third.run_requests[0].tags["dia/change"] == "added: orders.csv"
    # the file is recorded once: one observation (its data version) and one materialization
    assert sorted((type(e).__name__, e.partition) for e in third.asset_events) == [
        ("AssetMaterialization", "orders_csv"), ("AssetObservation", "orders_csv")]
    assert DataCursor.parse(third.cursor).pending.snapshot["orders.csv"]  # the whole file's hash


def test_only_changed_files_have_to_settle(env, monkeypatch):
    """A file that is not part of the change is not held back (nor holds the others back)."""
    data, _ = env
    instance = DagsterInstance.ephemeral()
    (data / "a.csv").write_text("id\n1\n")
    first = tick(instance, None)
    run_as(instance, first, "fine")
    monkeypatch.setenv("DIA_SETTLE_S", "3600")
    after = tick(instance, first.cursor)  # a.csv is done: nothing moves, nothing waits
    assert skipped(after) == "no change in the data folder"


def test_the_cursor_moves_past_a_change_only_when_its_run_succeeded(env):
    data, _ = env
    instance = DagsterInstance.ephemeral()
    (data / "a.csv").write_text("id\n1\n")
    first = tick(instance, None)
    [req] = first.run_requests
    assert req.tags[REQUEST_TAG] == req.run_key
    # the run is in progress: wait for it, ask for nothing
    queued = create_run_for_test(instance, job_name="build_job", status=DagsterRunStatus.STARTED, tags=req.tags)
    waiting = tick(instance, first.cursor)
    assert req.run_key in skipped(waiting)
    instance.delete_run(queued.run_id)
    # it crashed: asked for again, under a new run key but the same change
    run_as(instance, first, "crash")
    again = tick(instance, first.cursor)
    [retry] = again.run_requests
    assert retry.run_key == f"{req.run_key}-retry1" and retry.tags[REQUEST_TAG] == req.run_key
    assert retry.tags["dia/change"] == "added: a.csv" and retry.tags["dia/try"] == "2"
    # it crashed again: DIA_BUILD_TRIES=2 runs were tried; wait for a new change
    run_as(instance, again, "crash")
    tired = tick(instance, again.cursor)
    assert "tried 2 time(s)" in skipped(tired)
    assert "a.csv" not in DataCursor.parse(again.cursor).done  # never counted as done
    # a new change is asked for at once, and counts as done once its run succeeded
    (data / "a.csv").write_text("id\n2\n")
    fresh = tick(instance, again.cursor)
    assert len(fresh.run_requests) == 1 and fresh.run_requests[0].run_key not in {req.run_key, retry.run_key}
    run_as(instance, fresh, "fine")
    done = tick(instance, fresh.cursor)
    assert skipped(done) == "no change in the data folder"
    assert DataCursor.parse(done.cursor).done == DataCursor.parse(fresh.cursor).pending.snapshot
    assert isinstance(tick(instance, done.cursor), SkipReason)


def test_a_vanished_run_is_asked_for_again(env):
    """No run carries the request's tag (deleted, or lost with the daemon): ask again."""
    data, _ = env
    instance = DagsterInstance.ephemeral()
    (data / "a.csv").write_text("id\n1\n")
    first = tick(instance, None)
    again = tick(instance, first.cursor)
    assert again.run_requests[0].run_key.endswith("-retry1")


def test_a_run_killed_with_the_daemon_is_failed_and_asked_for_again(env):
    """Dagster still shows the run STARTED (nothing was left to mark it failed); the workspace's
    attempt record names a process that is gone: the run is marked failed and redone."""
    data, ws = env
    instance = DagsterInstance.ephemeral()
    (data / "a.csv").write_text("id\n1\n")
    first = tick(instance, None)
    run = create_run_for_test(instance, job_name="build_job", status=DagsterRunStatus.STARTED,
                              tags=first.run_requests[0].tags)
    BuildAttempt(attempt_id=run.run_id, command="dagster run x (build_job)", pid=2**22 + 7, started_at="t",
                 updated_at="t", step="load").write(ws / "state" / "attempt.json")
    again = tick(instance, first.cursor)
    assert again.run_requests[0].run_key.endswith("-retry1")
    assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.FAILURE  # frees the writer slot


def test_a_refused_build_is_a_verdict_not_retried(env):
    """The run validated the data and refused it: the change was checked; asking again would
    give the same answer."""
    data, _ = env
    instance = DagsterInstance.ephemeral()
    (data / "a.csv").write_text("id\n1\n")
    first = tick(instance, None)
    run_as(instance, first, "refuse")
    after = tick(instance, first.cursor)
    assert skipped(after) == "no change in the data folder"
    assert "a.csv" in DataCursor.parse(after.cursor).done


def test_a_failed_blocking_check_is_a_verdict_not_retried(env):
    """The first build of a folder is installed even when not accepted; its blocking check then
    fails the run: the data was checked, so that run is not asked for again either."""
    data, _ = env
    instance = DagsterInstance.ephemeral()
    (data / "a.csv").write_text("id\n1\n")
    first = tick(instance, None)

    @asset(check_specs=[AssetCheckSpec("key_validity", asset="table", blocking=True)])
    def table() -> MaterializeResult:
        return MaterializeResult(check_results=[AssetCheckResult(passed=False, severity=AssetCheckSeverity.ERROR)])

    run = materialize([table], instance=instance, tags=first.run_requests[0].tags, raise_on_error=False)
    assert not run.success
    after = tick(instance, first.cursor)
    assert skipped(after) == "no change in the data folder" and "a.csv" in DataCursor.parse(after.cursor).done


def test_a_cursor_of_an_older_dia_is_read_as_done(env):
    data, _ = env
    (data / "a.csv").write_text("id\n1\n")
    first = tick(DagsterInstance.ephemeral(), None)
    legacy = '{"a.csv": "' + DataCursor.parse(first.cursor).pending.snapshot["a.csv"] + '"}'
    assert skipped(tick(DagsterInstance.ephemeral(), legacy)) == "no change in the data folder"


def _started_run(instance: DagsterInstance, tags: dict[str, str], pid: int):
    """A STARTED build run whose worker logged its pid, as Dagster's run worker does at start."""
    run = create_run_for_test(instance, job_name="build_job", status=DagsterRunStatus.STARTED, tags=tags)
    instance.report_engine_event(f"Started process for run (pid: {pid}).", run, EngineEventData.in_process(pid))
    return run


def test_a_run_killed_before_its_first_step_is_failed_and_asked_for_again(env):
    """The worker died before the build wrote its attempt record (the record in the workspace is
    an older run's): the worker's pid from Dagster's events tells it is gone."""
    data, ws = env
    with instance_for_test() as instance:  # the default run launcher: workers on this host
        (data / "a.csv").write_text("id\n1\n")
        first = tick(instance, None)
        BuildAttempt(attempt_id="an-older-run", command="dia build", pid=os.getpid(), started_at="t",
                     updated_at="t", step="report", outcome="accepted").write(ws / "state" / "attempt.json")
        child = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
        run = _started_run(instance, first.run_requests[0].tags, int(child.stdout))
        again = tick(instance, first.cursor)
        assert again.run_requests[0].run_key.endswith("-retry1")
        assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.FAILURE


def test_a_run_whose_worker_lives_is_waited_for(env):
    """Same, with the worker alive (this process): still running, nothing failed or asked."""
    data, _ = env
    with instance_for_test() as instance:
        (data / "a.csv").write_text("id\n1\n")
        first = tick(instance, None)
        run = _started_run(instance, first.run_requests[0].tags, os.getpid())
        assert "waiting for run" in skipped(tick(instance, first.cursor))
        assert instance.get_run_by_id(run.run_id).status == DagsterRunStatus.STARTED
