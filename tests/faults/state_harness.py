"""A small export and a build child that dies (kill -9) or sleeps at a named step, for the
state, lock and crash-point tests."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb

from tests.conftest import ROOT


def write_csv(path: Path, header: list[str], rows: list[list[object]]) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def export(data: Path, orders: int = 20, codes: bool = False) -> None:
    """customers (10) and orders referencing them; `codes`: the referenced id rewritten as
    T1, T2, ... (the issue's crash in the foreign-key check)."""
    data.mkdir(exist_ok=True)
    write_csv(data / "customers.csv", ["customer_id", "name"],
              [[f"T{i}" if codes else i, f"C{i}"] for i in range(1, 11)])
    write_csv(data / "orders.csv", ["order_id", "customer_id", "total"],
              [[o, o % 10 + 1, o * 1.5] for o in range(1, orders + 1)])


def count(warehouse: Path, table: str) -> int:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        con.close()


CHILD = textwrap.dedent("""
    import os, signal, sys, time
    from dia_assets.pipeline import run
    data, ws, step, action, incremental = sys.argv[1:6]
    def hook(name):
        if name == step:
            if action == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            open(os.path.join(ws, "reached"), "w").write(str(os.getpid()))
            deadline = time.monotonic() + float(action)
            while not os.path.exists(os.path.join(ws, "release")) and time.monotonic() < deadline:
                time.sleep(0.05)
    run(data, ws, hook=hook, incremental=incremental == "1", command="child build")
""")


def _env() -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True")


def killed_build(data: Path, ws: Path, step: str, incremental: bool = False) -> int:
    """Run a build in a child process that kills itself (SIGKILL) at `step`; its pid."""
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(data), str(ws), step, "kill", "1" if incremental else "0"],
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == -signal.SIGKILL, err[-2000:]
    return proc.pid


def pausing_build(data: Path, ws: Path, step: str, seconds: float = 300) -> subprocess.Popen:
    """Start a build child that pauses at `step` until `release(ws)` (at most `seconds`);
    returns once it got there."""
    marker = ws / "reached"
    marker.unlink(missing_ok=True)
    (ws / "release").unlink(missing_ok=True)
    ws.mkdir(parents=True, exist_ok=True)
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(data), str(ws), step, str(seconds), "0"],
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not marker.exists():
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read()[-2000:] if proc.stderr else "child ended")
        assert time.monotonic() < deadline, "the child never reached its step"
        time.sleep(0.05)
    return proc


def release(ws: Path) -> None:
    """Let a pausing build go on."""
    (ws / "release").touch()
