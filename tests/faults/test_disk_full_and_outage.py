"""Disk full and a PostgreSQL outage end in one line naming the cause, the state STALE and the
installed warehouse intact (issue 26)."""

from __future__ import annotations

import errno
import os
import subprocess
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict
from typer.testing import CliRunner

from dia_assets.agents.schema_creator import generation
from dia_assets.agents.schema_creator.build import report_describes
from dia_assets.agents.schema_creator.failures import one_line
from dia_assets.agents.schema_creator.state import read_state
from dia_assets.cli.app import app
from dia_assets.contracts.report import ValidationReport
from dia_assets.pipeline import run
from tests.faults.state_harness import count, export
from tests.memory_fixtures import fresh_database_url, pg_server  # noqa: F401 - pytest fixture


def _status(ws: Path) -> tuple[int, str]:
    shown = CliRunner().invoke(app, ["status", "--workspace", str(ws)])
    return shown.exit_code, shown.output.splitlines()[0]


@pytest.fixture
def small_disk(tmp_path: Path):  # noqa: ANN201
    """A 6 MB tmpfs: room for a small warehouse, not for a build seven times its size beside it."""
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(disk)],
                                           capture_output=True).returncode:
        pytest.skip("mounting a small tmpfs needs root")
    yield disk
    subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_real_disk_full_is_one_line_and_keeps_the_warehouse(small_disk, tmp_path, monkeypatch):
    data, ws = tmp_path / "data", small_disk / "ws"
    export(data)
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    assert CliRunner().invoke(app, ["build", str(data)]).exit_code == 0
    warehouse = ws / "warehouse.duckdb"
    before = warehouse.read_bytes()
    export(data, orders=200_000)
    out = CliRunner().invoke(app, ["build", str(data), "--full"])
    lines = out.output.strip().splitlines()
    assert out.exit_code == 1 and len(lines) == 1 and "Traceback" not in out.output
    assert lines[0].startswith(f"error: dia build: failed: disk full writing {ws}/warehouse-building-")
    assert "warehouse in place: the build validated" in lines[0]
    assert warehouse.read_bytes() == before and count(warehouse, "orders") == 20
    assert not list(ws.glob("warehouse-building-*"))  # the failed build's file is gone again
    code, first = _status(ws)
    assert code == 1 and first.startswith("dia status: STALE: ") and "disk full writing" in first


def test_disk_full_after_the_swap_is_finished_on_the_next_start(tmp_path, monkeypatch):
    """The report cannot be written once the new file is in place: the state is STALE and says the
    validated build is in place; the next start writes its report."""
    data, ws = tmp_path / "data", tmp_path / "ws"
    export(data)
    assert run(data, ws).report.accepted
    export(data, orders=33)
    real = generation.write_report

    def full(report: ValidationReport, workspace: Path) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(Path(workspace) / "validation" / "report.json"))

    monkeypatch.setattr(generation, "write_report", full)
    with pytest.raises(OSError) as caught:
        run(data, ws)
    assert one_line(caught.value) == f"disk full writing {ws / 'validation' / 'report.json'}: no space left on device"
    monkeypatch.setattr(generation, "write_report", real)
    assert count(ws / "warehouse.duckdb", "orders") == 33  # validated, renamed into place
    state = read_state(ws)
    assert state.verdict == "stale" and "failed in step report: disk full writing" in state.headline
    assert "its validated build is in place and the next start writes its report" in state.headline
    again = run(data, ws)
    assert "finished: its validated build was already in place" in again.report.last_attempt.recovered[0]
    assert again.report.accepted and report_describes(again.report, ws / "warehouse.duckdb")
    assert _status(ws)[0] == 0


@pytest.fixture
def pg_url(pg_server) -> str:  # noqa: F811
    return fresh_database_url(pg_server, f"state_{os.getpid()}")


def _connections(pg_server: dict, url: str, allowed: bool) -> None:  # noqa: F811
    """Take the database down (refuse connections, end the open ones) or bring it back."""
    name = conninfo_to_dict(url)["dbname"]
    with psycopg.connect(pg_server["server"].uri(), autocommit=True) as con:
        con.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS {str(allowed).lower()}')
        if not allowed:
            con.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = %s AND pid <> pg_backend_pid()", (name,))


def _orders(url: str) -> int:
    with psycopg.connect(url) as con:
        return con.execute("SELECT count(*) FROM public.orders").fetchone()[0]


def test_a_postgres_outage_is_one_line_and_keeps_the_tables(tmp_path, pg_url, pg_server, monkeypatch):  # noqa: F811
    data, ws = tmp_path / "data", tmp_path / "ws"
    export(data)
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    monkeypatch.setenv("DIA_WAREHOUSE", pg_url)
    assert CliRunner().invoke(app, ["build", str(data)]).exit_code == 0
    export(data, orders=40)
    # down for the whole build
    _connections(pg_server, pg_url, False)
    try:
        out = CliRunner().invoke(app, ["build", str(data)])
    finally:
        _connections(pg_server, pg_url, True)
    lines = out.output.strip().splitlines()
    assert out.exit_code == 1 and len(lines) == 1 and "Traceback" not in out.output
    assert lines[0].startswith("error: dia build: failed: the PostgreSQL warehouse is unavailable: ")
    assert _orders(pg_url) == 20
    code, first = _status(ws)
    assert code == 1 and "the PostgreSQL warehouse is unavailable" in first
    # down in the middle of the copy: the transaction is rolled back
    def outage(step: str) -> None:
        if step == "postgres:customers":
            _connections(pg_server, pg_url, False)

    try:
        with pytest.raises(psycopg.OperationalError) as caught:
            run(data, ws, warehouse=pg_url, hook=outage)
    finally:
        _connections(pg_server, pg_url, True)
    assert one_line(caught.value).startswith("the PostgreSQL warehouse is unavailable: ")
    assert _orders(pg_url) == 20
    assert read_state(ws).verdict == "stale"
    assert CliRunner().invoke(app, ["build", str(data)]).exit_code == 0
    assert _orders(pg_url) == 40 and _status(ws)[0] == 0
