"""A real `dagster dev` over a workspace built from the bundled example data, for browser tests.

The workspace is built the way `make demo` builds it (`dia demo` in a subprocess, into a
temporary workspace and DAGSTER_HOME), so the UI shows what a new user sees after
`make demo && make ui`. `dagster dev` runs in its own session on a free loopback port and is
always stopped as a whole, with the embedded PostgreSQL, by `dia_assets.devserver.shutdown`.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dia_assets.devserver import _default_signals, _group, shutdown

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
START_TIMEOUT_S = float(os.environ.get("DIA_UI_START_TIMEOUT_S", "300"))
# The instance settings `make ui` writes (Makefile), so runs queue the same way.
DAGSTER_YAML = """telemetry:
  enabled: false
concurrency:
  runs:
    tag_concurrency_limits:
      - key: "dia/workspace"
        value: "writer"
        limit: 1
"""


@dataclass
class DagsterUI:
    """A running `dagster dev`: where it answers and where its state lives."""

    url: str
    workspace: Path
    home: Path
    log: Path
    proc: subprocess.Popen

    def graphql(self, query: str, variables: dict | None = None) -> dict:
        """One GraphQL request; raises on transport errors and GraphQL errors."""
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        req = urllib.request.Request(f"{self.url}/graphql", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=30) as resp:
            out = json.loads(resp.read())
        if out.get("errors"):
            raise RuntimeError(f"GraphQL errors: {out['errors']}")
        return out["data"]

    def log_tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


EXAMPLE_DATA = ROOT / "examples" / "data"


def _env(workspace: Path, home: Path, data_dir: Path = EXAMPLE_DATA) -> dict[str, str]:
    env = dict(os.environ)
    env.update({
        "DAGSTER_HOME": str(home),
        "DIA_WORKSPACE": str(workspace),
        "DIA_DATA_DIR": str(data_dir),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        # sensors tick every few seconds, so the first-start automation settles quickly
        "DIA_SENSOR_INTERVAL_S": "5",
        "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p),
    })
    env.pop("DIA_MODEL", None)  # no model: the questions stay unanswered, as in `make demo`
    return env


def build_workspace(base: Path, data_dir: Path = EXAMPLE_DATA, home: Path | None = None) -> tuple[Path, Path]:
    """`dia demo` into `base/ws` with instance `home` (default `base/home`): the path `make demo`
    takes. Another folder with the same `home` is a switch of folders in one instance."""
    workspace, home = base / "ws", home or base / "home"
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(DAGSTER_YAML, encoding="utf-8")
    cmd = [sys.executable, "-c", "from dia_assets.cli import app; app()", "demo",
           "--workspace", str(workspace), "--data-dir", str(data_dir)]
    log = base / "demo.log"
    with log.open("w") as out:
        done = subprocess.run(cmd, cwd=ROOT, env=_env(workspace, home, data_dir), stdout=out,
                              stderr=subprocess.STDOUT, timeout=START_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"`dia demo` failed ({done.returncode}):\n{log.read_text()[-4000:]}")
    return workspace, home


ACTIVE = {"QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING"}
_STATE = """{ runsOrError { ... on Runs { results { runId status endTime } } }
  workspaceOrError { ... on Workspace { locationEntries { locationOrLoadError {
    ... on RepositoryLocation { repositories { sensors { name sensorState {
      status ticks(limit: 1, statuses: [STARTED, SKIPPED, SUCCESS, FAILURE]) { timestamp } } } } } } } } } }"""


def settled(ui: DagsterUI) -> bool:
    """No run in progress, and every running sensor has ticked since the last run ended, so
    what the automation does on first start (a rebuild, a check run) is over. Skipped ticks
    count: `ticks` without `statuses` leaves them out (Dagster 1.13), and a sensor with
    nothing to do after a switch of folders only skips."""
    data = ui.graphql(_STATE)
    all_runs = data["runsOrError"]["results"]
    if any(r["status"] in ACTIVE for r in all_runs):
        return False
    last_end = max((r["endTime"] or 0 for r in all_runs), default=0)
    sensors = [s for e in data["workspaceOrError"]["locationEntries"]
               for repo in e["locationOrLoadError"]["repositories"] for s in repo["sensors"]
               if s["sensorState"]["status"] == "RUNNING"]
    return all(s["sensorState"]["ticks"] and s["sensorState"]["ticks"][0]["timestamp"] > last_end
               for s in sensors)


def wait_until_settled(ui: DagsterUI, timeout_s: float = START_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ui.proc.poll() is not None:
            raise RuntimeError(f"dagster dev exited with {ui.proc.returncode}:\n{ui.log_tail()}")
        if settled(ui):
            return
        time.sleep(2)
    raise RuntimeError(f"runs or sensors still busy after {timeout_s:.0f} s:\n{ui.log_tail()}")


def _location_loaded(ui: DagsterUI) -> bool:
    data = ui.graphql("{ workspaceOrError { __typename ... on Workspace { locationEntries {"
                      " name loadStatus locationOrLoadError { __typename } } } } }")
    entries = data["workspaceOrError"].get("locationEntries") or []
    if any(e["locationOrLoadError"] and e["locationOrLoadError"]["__typename"] == "PythonError"
           for e in entries):
        raise RuntimeError(f"the code location failed to load:\n{ui.log_tail()}")
    return bool(entries) and all(
        e["loadStatus"] == "LOADED" and e["locationOrLoadError"]
        and e["locationOrLoadError"]["__typename"] == "RepositoryLocation" for e in entries)


def wait_until_ready(ui: DagsterUI, timeout_s: float = START_TIMEOUT_S) -> None:
    """Until GraphQL answers and every code location is loaded; fails early if dagster exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ui.proc.poll() is not None:
            raise RuntimeError(f"dagster dev exited with {ui.proc.returncode}:\n{ui.log_tail()}")
        try:
            if _location_loaded(ui):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
            pass
        time.sleep(1)
    raise RuntimeError(f"dagster dev did not answer within {timeout_s:.0f} s:\n{ui.log_tail()}")


@contextmanager
def dagster_dev(base: Path, data_dir: Path = EXAMPLE_DATA, home: Path | None = None) -> Iterator[DagsterUI]:
    """Build a workspace of `data_dir` (the example) under `base`, serve it, and stop everything
    afterwards."""
    workspace, home = build_workspace(base, data_dir, home)
    port = free_port()
    log = base / "dagster-dev.log"
    dagster = BIN / "dagster"
    cmd = [str(dagster) if dagster.exists() else "dagster", "dev", "-w", str(ROOT / "workspace.yaml"),
           "-h", "127.0.0.1", "-p", str(port)]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(workspace, home, data_dir), stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_default_signals)  # noqa: PLW1509
    ui = DagsterUI(url=f"http://127.0.0.1:{port}", workspace=workspace, home=home, log=log, proc=proc)
    try:
        wait_until_ready(ui)
        wait_until_settled(ui)
        yield ui
    finally:
        shutdown(proc, workspace / "pgdata", grace_s=15)
        left = _group(proc.pid)
        if left:
            raise RuntimeError(f"processes left after stopping dagster dev: {[p.pid for p in left]}")
