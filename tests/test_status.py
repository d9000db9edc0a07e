"""`dia status`: the first line says the state of the warehouse in place and of the last build
attempt; exit 0 only when the warehouse in place is accepted and no build failed since."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import duckdb
import psycopg
import pytest
from typer.testing import CliRunner

from dia_assets.agents.schema_creator.attempt import Attempt, alive, attempt_path, read_attempt
from dia_assets.agents.schema_creator.failures import one_line
from dia_assets.agents.schema_creator.state import read_state
from dia_assets.cli.app import app
from dia_assets.pipeline import run
from tests.faults.state_harness import export


def _status(ws: Path) -> tuple[int, list[str]]:
    shown = CliRunner().invoke(app, ["status", "--workspace", str(ws)])
    return shown.exit_code, shown.output.splitlines()


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    data, ws = tmp_path / "data", tmp_path / "ws"
    export(data)
    assert run(data, ws).report.accepted
    return data, ws


def test_nothing_built_yet(tmp_path):
    code, lines = _status(tmp_path / "ws")
    assert code == 1 and lines[0].startswith("dia status: no build yet: no validation report at ")


def test_accepted_says_when_and_what_is_installed(built):
    _, ws = built
    code, lines = _status(ws)
    assert code == 0 and lines[0].startswith("dia status: accepted: the warehouse in place was validated ")
    assert lines[1].startswith("accepted: true")
    assert any(line.startswith("  installed: the build validated") and line.endswith("(accepted)") for line in lines)
    assert any("last attempt: `build " in line and "finished, accepted" in line for line in lines)


def test_a_running_build_is_building_and_the_installed_verdict_decides_the_exit(built):
    _, ws = built
    Attempt.begin(ws, "dia build elsewhere", "refined:orders")  # this live process stands for the builder
    state = read_state(ws)
    assert state.verdict == "building" and state.ok
    code, lines = _status(ws)
    assert code == 0 and lines[0].startswith("dia status: building: `dia build elsewhere` (pid ")
    assert "step refined:orders; warehouse in place: the build validated" in lines[0]


def test_a_reused_pid_is_not_taken_for_the_builder(built):
    _, ws = built
    attempt = Attempt.begin(ws, "dia build long ago", "load")
    attempt.record.pid_started = "0"  # same pid number, another process
    attempt.record.write(attempt_path(ws))
    assert alive(read_attempt(ws)) is False
    code, lines = _status(ws)
    assert code == 1 and "was killed (or timed out) in step load" in lines[0]


def test_a_first_build_that_fails_is_stale_without_any_report(tmp_path):
    data, ws = tmp_path / "data", tmp_path / "ws"
    export(data)

    def crash(step: str) -> None:
        if step == "plan":
            raise ValueError("the plan could not be made")

    with pytest.raises(ValueError):
        run(data, ws, hook=crash)
    started = read_attempt(ws).started_at
    code, lines = _status(ws)
    assert code == 1 and lines == [
        f"dia status: STALE: the build started {started} by `build {data}` (pid {os.getpid()}) failed in step "
        "plan: ValueError: the plan could not be made; warehouse in place: none"]


def test_a_warehouse_changed_after_its_validation_is_unvalidated(built):
    _, ws = built
    con = duckdb.connect(str(ws / "warehouse.duckdb"))
    con.execute("DELETE FROM orders WHERE order_id = 1")
    con.close()
    state = read_state(ws)
    assert state.verdict == "unvalidated" and not state.ok
    assert _status(ws)[0] == 1


def test_installed_but_not_accepted_exits_non_zero(built):
    data, ws = built
    with (data / "orders.csv").open("a") as fh:
        fh.write("99,77,1.0\n")  # an orphan: the strong key to customers fails
    result = run(data, ws, replace_anyway=True)
    assert result.report.installed and not result.report.accepted
    code, lines = _status(ws)
    assert code == 1 and lines[0].startswith("dia status: not accepted: the warehouse in place failed validation")


@pytest.mark.parametrize(("exc", "line"), [
    (OSError(errno.ENOSPC, "No space left on device", "/w/report.json"),
     "disk full writing /w/report.json: no space left on device"),
    (duckdb.TransactionException('TransactionContext Error: Failed to commit: Could not write file '
                                 '"/w/warehouse-building-7.duckdb": No space left on device'),
     "disk full writing /w/warehouse-building-7.duckdb: no space left on device"),
    (psycopg.OperationalError('connection failed: connection to server on socket "/tmp/.s.PGSQL.5432" failed: '
                              'No such file or directory\n\tIs the server running locally?'),
     'the PostgreSQL warehouse is unavailable: connection failed: connection to server on socket '
     '"/tmp/.s.PGSQL.5432" failed: No such file or directory'),
    (duckdb.ConversionException("Conversion Error: Could not convert string 'T1' to INT32\n\nLINE 1: SELECT"),
     "ConversionException: Conversion Error: Could not convert string 'T1' to INT32"),
])
def test_one_line_names_the_cause(exc, line):
    assert one_line(exc) == line


def test_one_line_finds_the_cause_in_a_chain():
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device", "/w/x")
        except OSError as inner:
            raise RuntimeError("load failed") from inner
    except RuntimeError as outer:
        assert one_line(outer) == "disk full writing /w/x: no space left on device"
