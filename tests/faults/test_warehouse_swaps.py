"""Swaps that cannot lose a warehouse: kills during a build, stale write-ahead logs, builds
that are not accepted, and the report/warehouse pair (issue: safety)."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.schema_creator.build import report_describes, summary, validate_warehouse
from dia_assets.agents.schema_creator.swap import clean_leftovers
from dia_assets.contracts.manifest import Manifest
from dia_assets.contracts.report import ValidationReport
from dia_assets.pipeline import run
from tests.conftest import ROOT


def _write(path: Path, header: list[str], rows: list[list[object]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def _export(data: Path, orders: int = 20, orphans: int = 0) -> None:
    data.mkdir(exist_ok=True)
    _write(data / "customers.csv", ["customer_id", "name"], [[i, f"C{i}"] for i in range(1, 11)])
    _write(data / "orders.csv", ["order_id", "customer_id", "total"],
           [[o, (o % 10 + 1) if o > orphans else 99, o * 1.5] for o in range(1, orders + 1)])


def _count(warehouse: Path, table: str) -> int:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


@pytest.fixture
def built(tmp_path):
    data, ws = tmp_path / "data", tmp_path / "ws"
    _export(data)
    result = run(data, ws)
    assert result.report.accepted and result.report.installed
    return data, ws, Path(result.load.warehouse)


def test_build_not_accepted_keeps_the_previous_warehouse(built):
    data, ws, warehouse = built
    before = warehouse.read_bytes()
    _export(data, orders=30, orphans=3)  # a strong foreign key now has orphans
    result = run(data, ws)
    assert not result.report.accepted and not result.report.installed
    assert warehouse.read_bytes() == before and _count(warehouse, "orders") == 20
    rejected = Path(result.report.rejected_build)
    assert rejected.exists() and _count(rejected, "orders") == 30
    report = ValidationReport.read(ws / "validation" / "report.json")
    assert not report.accepted and not report.installed  # never a stale "accepted: true"
    assert "NOT INSTALLED" in summary(report)


def test_replace_anyway_installs_a_build_that_is_not_accepted(built):
    data, ws, warehouse = built
    _export(data, orders=30, orphans=3)
    result = run(data, ws, replace_anyway=True)
    assert not result.report.accepted and result.report.installed
    assert _count(warehouse, "orders") == 30
    assert report_describes(result.report, warehouse)


def test_stale_wal_beside_the_target_does_not_break_the_swap(built, tmp_path):
    data, ws, warehouse = built
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("PRAGMA disable_checkpoint_on_shutdown")
    con.execute("CREATE TABLE junk AS SELECT range AS x FROM range(1000)")
    con.close()
    wal = other.with_name(other.name + ".wal")
    assert wal.exists()
    os.replace(wal, warehouse.with_name(warehouse.name + ".wal"))  # a WAL that is not this file's
    _export(data, orders=25)
    result = run(data, ws)
    assert result.report.installed and _count(warehouse, "orders") == 25
    assert not warehouse.with_name(warehouse.name + ".wal").exists()
    assert list(warehouse.parent.glob("warehouse.duckdb.wal.stale-*"))


KILLER = textwrap.dedent("""
    import os, signal, sys
    from dia_assets.pipeline import run
    from dia_assets.contracts.interpretation import Interpretation
    step = sys.argv[3]
    def hook(name):
        if name == step:
            os.kill(os.getpid(), signal.SIGKILL)
    run(sys.argv[1], sys.argv[2], hook=hook)
""")


def _killed_build(data: Path, ws: Path, step: str) -> int:
    """Run a build in a child process that kills itself at `step`; its pid."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")
    proc = subprocess.Popen([sys.executable, "-c", KILLER, str(data), str(ws), step], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL, err[-2000:]
    return proc.pid


@pytest.mark.parametrize("step", ["staging:orders", "refined:orders", "swap"])
def test_kill_during_a_build_keeps_the_previous_warehouse_and_leftovers_are_cleaned(built, step, tmp_path, monkeypatch):
    data, ws, warehouse = built
    # a temp folder of its own: any build in another test worker sweeps a dead pid's temporary
    # folders from the shared one (clean_leftovers), between the kill and the look below
    private = tmp_path / "tmp"
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))  # the killed child's
    monkeypatch.setattr(tempfile, "tempdir", str(private))  # this process's next build
    before = warehouse.read_bytes()
    _export(data, orders=40)
    pid = _killed_build(data, ws, step)
    assert warehouse.read_bytes() == before and _count(warehouse, "orders") == 20
    leftovers = list(warehouse.parent.glob("warehouse-building-*"))
    assert leftovers, "a killed build leaves its building file"
    temp = [p for p in Path(tempfile.gettempdir()).glob(f"dia-*-{pid}-*") if p.is_dir()]
    assert temp or step == "swap", "a killed load leaves its temporary folders"
    result = run(data, ws)  # the next build cleans up and installs
    assert result.report.installed and _count(warehouse, "orders") == 40
    assert not list(warehouse.parent.glob("warehouse-building-*"))
    assert not [p for p in temp if p.exists()]


def test_kill_right_after_the_swap_is_detected_and_mended(built):
    data, ws, warehouse = built
    _export(data, orders=33)
    _killed_build(data, ws, "installed")
    assert _count(warehouse, "orders") == 33  # the new warehouse is in place and opens
    stale = ValidationReport.read(ws / "validation" / "report.json")
    assert not report_describes(stale, warehouse)  # the older report does not claim this file
    manifest = Manifest.read(ws / "schema" / "manifest.json")
    fresh = validate_warehouse(manifest, str(warehouse), ws)
    assert report_describes(fresh, warehouse) and fresh.accepted


def test_leftovers_of_live_processes_are_kept(tmp_path):
    target = tmp_path / "w.duckdb"
    mine = tmp_path / f"w-building-{os.getpid()}.duckdb"
    dead = tmp_path / "w-building-999999999.duckdb"
    mine.write_bytes(b"x")
    dead.write_bytes(b"x")
    removed = clean_leftovers(target)
    assert dead in removed and not dead.exists() and mine.exists()
