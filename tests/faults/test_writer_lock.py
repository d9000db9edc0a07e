"""One writer per workspace: a second `dia build` fails at once naming the first (or waits with
--wait), a killed writer's lock is gone with it, and Dagster steps and `dia demo` take the
same lock (issue 26: two builds on one workspace mixed their artifacts)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from dagster import materialize
from dagster_duckdb import DuckDBResource
from typer.testing import CliRunner

from dia_assets.agents.schema_creator.attempt import read_attempt
from dia_assets.agents.schema_creator.build import report_describes
from dia_assets.agents.schema_creator.writer_lock import WorkspaceBusy, holder, writer_lock
from dia_assets.cli.app import app
from dia_assets.cli.demo import run_demo
from dia_assets.contracts.manifest import Manifest
from dia_assets.contracts.report import ValidationReport
from dia_assets.dagster.resources.workspace import WorkspaceResource
from dia_assets.dagster.schema import schema_assets
from dia_assets.pipeline import run
from tests.conftest import ROOT
from tests.faults.state_harness import count, export, pausing_build, release


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path, Path]:
    data, ws = tmp_path / "data", tmp_path / "ws"
    export(data)
    result = run(data, ws)
    assert result.report.accepted
    return data, ws, Path(result.load.warehouse)


def test_a_second_build_fails_fast_naming_the_first_and_a_kill_frees_the_workspace(built, monkeypatch):
    data, ws, warehouse = built
    export(data, orders=40)
    first = pausing_build(data, ws, "staging:orders")
    try:
        who = holder(ws)
        assert who is not None and who["pid"] == first.pid and who["command"] == "child build"
        monkeypatch.setenv("DIA_WORKSPACE", str(ws))
        second = CliRunner().invoke(app, ["build", str(data)])
        line = second.output.strip()
        assert second.exit_code == 1 and len(line.splitlines()) == 1
        assert line.startswith("error: dia build: not started: workspace ") and f"pid {first.pid} (child build) since" in line
        assert read_attempt(ws).pid == first.pid  # the refused writer wrote nothing
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=60)
    assert holder(ws) is None  # the OS released the killed writer's lock
    again = CliRunner().invoke(app, ["build", str(data)])
    assert again.exit_code == 0, again.output
    assert count(warehouse, "orders") == 40
    assert "killed (or timed out) in step staging:orders; rolled back" in again.output


def test_with_wait_the_second_build_runs_after_the_first(built):
    data, ws, warehouse = built
    export(data, orders=30)
    first = pausing_build(data, ws, "validate")
    env = dict(os.environ, DIA_WORKSPACE=str(ws), PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")
    second = subprocess.Popen([sys.executable, "-m", "dia_assets.cli", "build", str(data), "--wait", "300"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    waiting = ""
    while not waiting.startswith("waiting") and (line := second.stderr.readline()):
        waiting = line  # it says so (after any import warnings), then waits
    assert waiting.startswith(f"waiting for workspace {ws}: it is being written by pid {first.pid} (child build)")
    release(ws)
    assert first.wait(timeout=300) == 0
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err[-2000:]
    assert out.startswith("accepted: true") and count(warehouse, "orders") == 30


def test_the_lock_is_reentrant_in_a_thread_and_exclusive_across_threads(tmp_path):
    ws = tmp_path / "ws"
    errors: list[str] = []
    with writer_lock(ws, "outer"), writer_lock(ws, "inner"):  # a build's load inside its run
        def other() -> None:
            try:
                with writer_lock(ws, "other"):
                    errors.append("entered")
            except WorkspaceBusy as busy:
                errors.append(str(busy))

        t = threading.Thread(target=other)
        t.start()
        t.join()
    assert len(errors) == 1 and f"pid {os.getpid()} (outer)" in errors[0]
    with writer_lock(ws, "after"):
        pass  # released by the outermost exit


def test_a_dagster_step_waits_for_the_writer_and_then_fails_without_marking_stale(built, monkeypatch):
    data, ws, warehouse = built
    monkeypatch.setenv("DIA_WRITER_WAIT_S", "0.5")
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    ready, release = threading.Event(), threading.Event()

    def hold() -> None:
        with writer_lock(ws, "dia build elsewhere"):
            ready.set()
            release.wait(60)

    t = threading.Thread(target=hold)
    t.start()
    ready.wait(10)
    try:
        result = materialize(schema_assets[:1], resources={
            "workspace": WorkspaceResource(root=str(ws), data_dir=str(data)),
            "duckdb": DuckDBResource(database=str(warehouse))}, raise_on_error=False)
    finally:
        release.set()
        t.join()
    assert not result.success
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    error = failure.event_specific_data.error.cause
    assert error.cls_name == "WorkspaceBusy" and "(dia build elsewhere) since " in error.message
    assert "after waiting 0.5 s" in error.message
    assert read_attempt(ws).outcome == "accepted"  # a step that never got the workspace changes no state


def test_demo_is_a_writer_too(built):
    data, ws, _ = built
    messages: list[str] = []
    first = pausing_build(data, ws, "interpret")
    try:
        assert run_demo(data, ws, messages.append) == 1
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=60)
    assert len(messages) == 1 and messages[0].startswith(f"dia demo: not started: workspace {ws} is being written")
    assert f"by pid {first.pid} (child build) since " in messages[0]


def test_two_builds_started_together_never_mix_their_artifacts(tmp_path):
    """Two `dia build` of different folders on one workspace at once: each either ran alone or
    was refused, and the workspace describes one of them throughout."""
    ws = tmp_path / "ws"
    folders = {"a": 20, "b": 45}
    for name, orders in folders.items():
        export(tmp_path / name, orders=orders)
    env = dict(os.environ, DIA_WORKSPACE=str(ws), PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")
    procs = {name: subprocess.Popen([sys.executable, "-m", "dia_assets.cli", "build", str(tmp_path / name), "--full"],
                                    env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for name in folders}
    outs = {name: (p.communicate(timeout=300)[0], p.returncode) for name, p in procs.items()}
    for out, code in outs.values():
        assert code == 0 or (code == 1 and "dia build: not started: workspace" in out), out[-2000:]
    report = ValidationReport.read(ws / "validation" / "report.json")
    installed = Manifest.read(ws / "schema" / "installed_manifest.json")
    winner = Path(installed.data_dir).name
    assert report.accepted and report_describes(report, ws / "warehouse.duckdb")
    assert Manifest.read(ws / "schema" / "manifest.json").data_dir == installed.data_dir
    assert next(r.refined for r in report.row_counts if r.table == "orders") == folders[winner]
    assert count(ws / "warehouse.duckdb", "orders") == folders[winner]
