"""A real `dagster-daemon run` (sensors, run queue, runs in their own processes) over a temp
workspace, for the live replay: started in its own session so a test can kill it whole, the
way a crash or `kill -9` of the daemon does.

`sitecustomize.py` in HOOKS is imported by every Python process the daemon starts (code server,
run workers): with DIA_TEST_PAUSE_FILE set and that file present, a run's warehouse step stops
right before it loads, writes `<pause file>.reached` with its pid and waits, so a test can kill
it mid-build at a known step."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, RunsFilter
from dagster._core.instance.ref import InstanceRef

from tests.conftest import ROOT

BIN = Path(sys.executable).parent
DAGSTER_YAML = """telemetry:
  enabled: false
run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
    tag_concurrency_limits:
      - key: "dia/workspace"
        value: "writer"
        limit: 1
"""
SITECUSTOMIZE = '''
import os
if os.environ.get("DIA_TEST_PAUSE_FILE"):
    import time
    from dia_assets.agents.schema_creator import build as _build
    _load = _build.load_and_validate
    def _paused(*args, **kwargs):
        pause = os.environ["DIA_TEST_PAUSE_FILE"]
        if os.path.exists(pause):
            with open(pause + ".reached", "w") as fh:
                fh.write(str(os.getpid()))
            while os.path.exists(pause):
                time.sleep(0.1)
        return _load(*args, **kwargs)
    _build.load_and_validate = _paused
'''
IN_PROGRESS = {DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
               DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING}


class LiveDaemon:
    def __init__(self, base: Path, data: Path, ws: Path, env: dict[str, str]):
        self.base, self.data, self.ws = base, data, ws
        self.home = base / "dagster_home"
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "dagster.yaml").write_text(DAGSTER_YAML)
        hooks = base / "hooks"
        hooks.mkdir(exist_ok=True)
        (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
        self.pause = base / "pause-load"
        self.env = {**os.environ, **env, "DAGSTER_HOME": str(self.home), "DIA_WORKSPACE": str(ws),
                    "DIA_DATA_DIR": str(data), "DIA_TEST_PAUSE_FILE": str(self.pause),
                    "LITELLM_LOCAL_MODEL_COST_MAP": "True", "PYTHONPATH": os.pathsep.join([str(ROOT), str(hooks)])}
        self.env.pop("DIA_MODEL", None)
        self.env.pop("DIA_WAREHOUSE", None)
        self.proc: subprocess.Popen | None = None
        self.log = base / "daemon.log"
        self.instance = DagsterInstance.from_ref(InstanceRef.from_dir(str(self.home)))

    def start(self) -> None:
        with self.log.open("a") as out:
            self.proc = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", str(ROOT / "workspace.yaml")],
                                         cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)

    def kill(self) -> None:
        """SIGKILL to the daemon's whole session: daemon, code server and run workers at once."""
        assert self.proc is not None
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        self.proc = None

    def stop(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        except ProcessLookupError:
            pass
        self.proc = None

    def runs(self, job: str | None = None) -> list[DagsterRun]:
        """Oldest first."""
        found = self.instance.get_runs(filters=RunsFilter(job_name=job) if job else None)
        return list(reversed(found))

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:]) if self.log.exists() else ""

    def wait_for(self, what: str, done: Callable[[], bool], timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"the daemon exited ({self.proc.returncode}):\n{self.log_tail()}")
            if done():
                return
            time.sleep(0.5)
        raise AssertionError(f"timed out waiting for {what}; runs: "
                             f"{[(r.job_name, r.status.value, r.tags.get('dia/change')) for r in self.runs()]}\n"
                             f"{self.log_tail()}")

    def builds_after(self, before: int, quiet_s: float = 7.0, timeout_s: float = 150) -> list[DagsterRun]:
        """The build_job runs started since `before` of them existed, once they (and every other
        run) ended and no new one came for `quiet_s` (more than one sensor loop, so a retry the
        sensor would ask for is seen)."""
        deadline = time.monotonic() + timeout_s
        while True:
            self.wait_for("the runs to end", lambda: len(self.runs("build_job")) > before and not any(
                r.status in IN_PROGRESS for r in self.runs()), max(1.0, deadline - time.monotonic()))
            seen = len(self.runs())
            time.sleep(quiet_s)
            if len(self.runs()) == seen and not any(r.status in IN_PROGRESS for r in self.runs()):
                return self.runs("build_job")[before:]
