"""Nothing reads `accepted` that was not checked: a build that crashed or was killed leaves the
state STALE (report, `dia status`), and the next start finishes or rolls back what it left and
says which (issue 26, "installed versus last attempt" and "interrupted steps")."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from dia_assets.agents.schema_creator.attempt import read_attempt
from dia_assets.agents.schema_creator.build import report_describes
from dia_assets.agents.schema_creator.generation import pending_path
from dia_assets.agents.schema_creator.state import read_state, stale_reason
from dia_assets.agents.schema_creator.swap import content_hash
from dia_assets.cli.app import app
from dia_assets.contracts.manifest import Manifest
from dia_assets.contracts.report import ValidationReport
from dia_assets.pipeline import run
from tests.faults.state_harness import count, export, killed_build


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path, Path]:
    data, ws = tmp_path / "data", tmp_path / "ws"
    export(data)
    result = run(data, ws)
    assert result.report.accepted and result.report.installed
    return data, ws, Path(result.load.warehouse)


def _status(ws: Path) -> tuple[int, str]:
    shown = CliRunner().invoke(app, ["status", "--workspace", str(ws)])
    return shown.exit_code, shown.output


def test_the_issue_case_ids_rewritten_as_codes_never_reads_accepted(built, monkeypatch):
    data, ws, warehouse = built
    before = warehouse.read_bytes()
    export(data, codes=True)  # customers.customer_id becomes T1, T2, ...: orders still reference 1, 2, ...
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    out = CliRunner().invoke(app, ["build", str(data)])
    assert out.exit_code != 0 and "Traceback" not in out.output
    code, text = _status(ws)
    assert code == 1 and text.splitlines()[0].startswith("dia status: STALE: ")
    report = ValidationReport.read(ws / "validation" / "report.json")
    assert not report.accepted and report.stale_reason
    assert report.installed_build is not None and report.installed_build.accepted  # the build in place, apart
    assert report.last_attempt is not None and report.last_attempt.outcome in ("failed", "not_accepted")
    assert warehouse.read_bytes() == before and stale_reason(ws)


def test_a_crash_anywhere_in_the_build_is_one_line_and_stale(built, monkeypatch):
    data, ws, warehouse = built
    before = warehouse.read_bytes()
    export(data, orders=30)

    def crash(step: str) -> None:
        if step == "validate":
            raise duckdb.ConversionException("Conversion Error: Could not convert string 'T1' to INT32")

    with pytest.raises(duckdb.ConversionException):
        run(data, ws, hook=crash)
    attempt = read_attempt(ws)
    assert attempt is not None and attempt.outcome == "failed" and attempt.step == "validate"
    assert attempt.error == "ConversionException: Conversion Error: Could not convert string 'T1' to INT32"
    report = ValidationReport.read(ws / "validation" / "report.json")
    assert not report.accepted and "failed in step validate: ConversionException" in report.stale_reason
    assert "STALE / FAILED" in (ws / "validation" / "report.md").read_text()
    assert "Traceback" in (ws / "state" / "last_error.txt").read_text()  # the details, kept aside
    assert warehouse.read_bytes() == before and not pending_path(ws).exists()
    code, text = _status(ws)
    first = text.splitlines()[0]
    assert code == 1 and first.startswith("dia status: STALE: ") and "failed in step validate" in first
    assert "warehouse in place: the build validated" in first and "(accepted)" in first
    # the next build that finishes validation ends the STALE state
    again = run(data, ws)
    assert again.report.accepted and count(warehouse, "orders") == 30
    assert _status(ws)[0] == 0 and stale_reason(ws) is None


# The steps of a full DuckDB build, in order, and what the next start must do after a kill there.
KILLS = [
    ("interpret", "nothing to finish or roll back", False),
    ("plan", "nothing to finish or roll back", False),
    ("staging:orders", "rolled back: removed its unfinished build", False),
    ("validate", "rolled back: removed its unfinished build", False),
    ("pending", "rolled back: its validated build was never installed", False),
    ("swap", "rolled back: its validated build was never installed", False),
    ("installed", "finished: its validated build was already in place", True),
    ("report written", "finished: its validated build was already in place", True),
]


@pytest.mark.parametrize(("step", "next_start", "new_in_place"), KILLS)
def test_a_kill_at_each_step_is_stale_then_finished_or_rolled_back(built, step, next_start, new_in_place):
    data, ws, warehouse = built
    export(data, orders=35)
    killed_build(data, ws, step)
    # the warehouse in place opens, and is the old or the new build, never a mix
    assert count(warehouse, "orders") == (35 if new_in_place else 20)
    state = read_state(ws)
    assert state.verdict == "stale" and not state.ok
    assert f"was killed (or timed out) in step {step}" in state.headline
    code, text = _status(ws)
    assert code == 1 and text.startswith("dia status: STALE: ")
    assert stale_reason(ws)  # the checks fail until a build finishes
    # the next start classifies what the kill left, says which, and the build goes on from there
    result = run(data, ws)
    notes = result.report.last_attempt.recovered if result.report.last_attempt else []
    assert len(notes) == 1 and f"killed (or timed out) in step {step}" in notes[0] and next_start in notes[0]
    assert result.report.reload is not None and result.report.reload.mode == "full"
    assert result.report.accepted and count(warehouse, "orders") == 35
    assert report_describes(result.report, warehouse) and not pending_path(ws).exists()
    assert not list(warehouse.parent.glob("warehouse-building-*"))
    installed = Manifest.read(ws / "schema" / "installed_manifest.json")
    orders = next(t for t in installed.tables if t.name == "orders")
    sources = json.loads((ws / "interpretation.json").read_text())["sources"]
    assert orders.content_hash == next(s["content_hash"] for s in sources if s["name"] == "orders")
    assert _status(ws)[0] == 0


def test_a_kill_after_the_report_before_the_attempt_closes_reads_finished(built):
    data, ws, warehouse = built
    export(data, orders=25)
    killed_build(data, ws, "recorded")  # everything written but the attempt's own last line
    assert read_attempt(ws).outcome == "running"
    state = read_state(ws)
    assert state.verdict == "accepted" and state.attempt.outcome == "accepted"
    assert count(warehouse, "orders") == 25


def test_kill_between_report_and_installed_manifest_then_file_put_back(built):
    """The fault review's case: an incremental reload killed after the report, before
    installed_manifest.json; the file then restored to its previous content. The next build
    must not keep the killed build's rows."""
    data, ws, warehouse = built
    original = (data / "orders.csv").read_bytes()
    export(data, orders=1020)
    killed_build(data, ws, "report written", incremental=True)
    assert count(warehouse, "orders") == 1020
    (data / "orders.csv").write_bytes(original)  # put back
    result = run(data, ws, incremental=True)
    assert result.report.accepted and count(warehouse, "orders") == 20
    assert next(r for r in result.report.row_counts if r.table == "orders").refined == 20
    assert content_hash(warehouse) == result.report.warehouse_hash


def test_a_terminated_build_is_stale_like_a_crash(built):
    """A Dagster run that is terminated or times out is interrupted inside its step (a
    BaseException, as Ctrl-C is for `dia build`): the attempt is failed, the state STALE."""
    from dagster._core.errors import DagsterExecutionInterruptedError

    data, ws, warehouse = built
    export(data, orders=44)

    def terminate(step: str) -> None:
        if step == "refined:orders":
            raise DagsterExecutionInterruptedError("the run was terminated")

    with pytest.raises(DagsterExecutionInterruptedError):
        run(data, ws, hook=terminate)
    attempt = read_attempt(ws)
    assert attempt.outcome == "failed" and attempt.step == "refined:orders"
    assert attempt.error == "DagsterExecutionInterruptedError: the run was terminated"
    assert count(warehouse, "orders") == 20 and not list(warehouse.parent.glob("warehouse-building-*"))
    assert _status(ws)[0] == 1 and stale_reason(ws)
