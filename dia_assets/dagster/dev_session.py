"""One `dagster dev` on a free loopback port for a workspace, started, awaited and stopped whole.

The browser tests (tests/browser/server.py) and the UI bench (bench/ui.py) both need what `make ui`
serves, driven through the GraphQL API the UI itself uses, and both must never leave a webserver,
daemon, code server, run worker or embedded PostgreSQL behind. So this is the one place that
starts it: its own session, default signal dispositions, the instance's `dagster.yaml` written as
`dia ui` writes it (dia_assets/dagster/instance.py) unless the folder has one, then a wait until every code
location is loaded; on exit `dia_assets.dagster.devserver.shutdown` stops the group and the PostgreSQL.
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
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from dia_assets.dagster.devserver import BOOT, _default_signals, _group, shutdown
from dia_assets.dagster.instance import DAGSTER_YAML
from dia_assets.platform.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
ACTIVE = {"QUEUED", "NOT_STARTED", "STARTING", "STARTED", "CANCELING"}
_LOADED = ("{ workspaceOrError { __typename ... on Workspace { locationEntries {"
           " name loadStatus locationOrLoadError { __typename } } } } }")
_STATE = """{ runsOrError { ... on Runs { results { runId status endTime } } }
  workspaceOrError { ... on Workspace { locationEntries { locationOrLoadError {
    ... on RepositoryLocation { repositories { sensors { name sensorState {
      status ticks(limit: 1, statuses: [STARTED, SKIPPED, SUCCESS, FAILURE]) { timestamp } } } } } } } } } }"""


@dataclass
class DevSession:
    """A running `dagster dev`: where it answers and where its state lives."""

    url: str
    workspace: Path
    home: Path
    log: Path
    proc: subprocess.Popen

    def graphql(self, query: str, variables: dict | None = None, timeout_s: float = 30) -> dict:
        """One GraphQL request; raises on transport errors and GraphQL errors."""
        body = json.dumps({"query": query, "variables": variables or {}}).encode()
        req = urllib.request.Request(f"{self.url}/graphql", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            out = json.loads(resp.read())
        if out.get("errors"):
            raise RuntimeError(f"GraphQL errors: {out['errors']}")
        return out["data"]

    def log_tail(self, lines: int = 40) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def check_alive(self) -> None:
        if self.proc.poll() is not None:
            raise RuntimeError(f"dagster dev exited with {self.proc.returncode}:\n{self.log_tail()}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def write_instance_config(home: Path, config: str = DAGSTER_YAML) -> Path:
    """`home/dagster.yaml` as `dia ui` writes it, unless the folder already has one."""
    home.mkdir(parents=True, exist_ok=True)
    path = home / "dagster.yaml"
    if not path.exists():
        path.write_text(config, encoding="utf-8")
    return path


def session_env(workspace: Path, home: Path, data_dir: Path | None = None,
                extra: Mapping[str, str] | None = None, pythonpath: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment `dagster dev` and everything it starts see: this instance and workspace,
    no model unless `extra` names one, the bundled litellm cost map (no network), and, first on
    the PYTHONPATH, dia_assets/boot (warm run workers, a 2 s backfill loop) as `dia ui` has it."""
    env = dict(os.environ)
    env.pop("DIA_MODEL", None)
    env.update({"DAGSTER_HOME": str(home), "DIA_WORKSPACE": str(workspace),
                "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    if data_dir is not None:
        env["DIA_DATA_DIR"] = str(data_dir)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BOOT), *pythonpath, str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.update(extra or {})
    return env


def dev_command(port: int) -> list[str]:
    """`dagster dev` over the project's workspace.yaml on 127.0.0.1:`port` (the code location
    `dg dev` serves too; `dagster dev -w` needs no project layout in the working directory)."""
    dagster = Path(sys.executable).with_name("dagster")
    return [str(dagster) if dagster.exists() else "dagster", "dev", "-w", str(ROOT / "workspace.yaml"),
            "-h", "127.0.0.1", "-p", str(port)]


def location_loaded(session: DevSession) -> bool:
    """Every code location loaded; raises when one failed to load."""
    entries = session.graphql(_LOADED)["workspaceOrError"].get("locationEntries") or []
    if any(e["locationOrLoadError"] and e["locationOrLoadError"]["__typename"] == "PythonError" for e in entries):
        raise RuntimeError(f"the code location failed to load:\n{session.log_tail()}")
    return bool(entries) and all(
        e["loadStatus"] == "LOADED" and e["locationOrLoadError"]
        and e["locationOrLoadError"]["__typename"] == "RepositoryLocation" for e in entries)


def wait_until_ready(session: DevSession, timeout_s: float = 300) -> None:
    """Until GraphQL answers and every code location is loaded; fails early if dagster exits."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        session.check_alive()
        try:
            if location_loaded(session):
                return
        except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError):
            pass
        time.sleep(0.5)
    raise RuntimeError(f"dagster dev did not answer within {timeout_s:.0f} s:\n{session.log_tail()}")


def settled(session: DevSession) -> bool:
    """No run in progress, and every running sensor has ticked since the last run ended, so
    what the automation does on first start (a rebuild, a check run) is over. Skipped ticks
    count: `ticks` without `statuses` leaves them out (Dagster 1.13)."""
    data = session.graphql(_STATE)
    all_runs = data["runsOrError"]["results"]
    if any(r["status"] in ACTIVE for r in all_runs):
        return False
    last_end = max((r["endTime"] or 0 for r in all_runs), default=0)
    sensors = [s for e in data["workspaceOrError"]["locationEntries"]
               for repo in e["locationOrLoadError"]["repositories"] for s in repo["sensors"]
               if s["sensorState"]["status"] == "RUNNING"]
    return all(s["sensorState"]["ticks"] and s["sensorState"]["ticks"][0]["timestamp"] > last_end
               for s in sensors)


def wait_until_settled(session: DevSession, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        session.check_alive()
        if settled(session):
            return
        time.sleep(1)
    raise RuntimeError(f"runs or sensors still busy after {timeout_s:.0f} s:\n{session.log_tail()}")


@contextmanager
def dev_session(workspace: Path, home: Path, log: Path, data_dir: Path | None = None,
                env: Mapping[str, str] | None = None, timeout_s: float = 300,
                settle: bool = True) -> Iterator[DevSession]:
    """`dagster dev` for `workspace` with instance `home`, output in `log`: yields once every
    code location is loaded (and, with `settle`, the first-start automation is over); stops
    the whole group and the workspace's embedded PostgreSQL afterwards, and raises if anything
    of it is left."""
    write_instance_config(home)
    port = free_port()
    with log.open("w") as out:
        proc = subprocess.Popen(dev_command(port), cwd=ROOT, env=dict(env) if env is not None else
                                session_env(workspace, home, data_dir),
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                preexec_fn=_default_signals)  # noqa: PLW1509
    session = DevSession(url=f"http://127.0.0.1:{port}", workspace=workspace, home=home, log=log, proc=proc)
    try:
        wait_until_ready(session, timeout_s)
        if settle:
            wait_until_settled(session, timeout_s)
        yield session
    finally:
        shutdown(proc, Workspace(workspace).pgdata, grace_s=15)
        left = _group(proc.pid)
        if left:
            raise RuntimeError(f"processes left after stopping dagster dev: {[p.pid for p in left]}")
