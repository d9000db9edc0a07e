"""A real `dagster-daemon run` (sensors, run queue, runs in their own processes) over a temp
workspace, for the live replays: started in its own session so a test can kill it whole, the
way a crash or `kill -9` of the daemon does.

`sitecustomize.py` in HOOKS is imported by every Python process the daemon starts:
- in the daemon itself, the sensor loop's floor (Dagster's `MIN_INTERVAL_LOOP_TIME`, 5 s) is
  lowered to DIA_TEST_SENSOR_LOOP_S: each reaction waits for a loop or two, so this is most of
  a replay's wall time. The sensors' own code is the product's, unchanged;
- in the code server and run workers, with DIA_TEST_PAUSE_FILE set and that file present, the warehouse step
  stops right before it loads, writes `<pause file>.reached` with its pid and waits, so a test
  can kill it mid-build at a known step; with `<pause file>-start` present, a build stops the
  same way before it records its attempt (before its first step), writing `-start.reached`.

Waiting is by sensor ticks, not by sleeping: `quiet()` returns once no run is in progress and
each sensor that reacts to the data has completed a tick that started after the last run ended
(that tick saw every outcome, and a run it requested is created before the tick completes, so
it would show in progress)."""

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
from dagster._core.scheduler.instigation import InstigatorTick, InstigatorType, TickStatus

from tests.conftest import ROOT

BIN = Path(sys.executable).parent
SENSOR_LOOP_S = 1.0
DAGSTER_YAML = """telemetry:
  enabled: false
run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
    dequeue_use_threads: true
    dequeue_num_workers: 4
    tag_concurrency_limits:
      - key: "dia/workspace"
        value: "writer"
        limit: 1
sensors:
  use_threads: true
  num_workers: 4
run_monitoring:
  enabled: true
  start_timeout_seconds: 90
  poll_interval_seconds: 5
"""
SITECUSTOMIZE = '''
import os
import sys
DAEMON = bool(sys.argv) and sys.argv[0].endswith("dagster-daemon")
if os.environ.get("DIA_TEST_SENSOR_LOOP_S") and DAEMON:
    import dagster._daemon.sensor as _sensor_daemon
    _sensor_daemon.MIN_INTERVAL_LOOP_TIME = float(os.environ["DIA_TEST_SENSOR_LOOP_S"])
if os.environ.get("DIA_TEST_PAUSE_FILE") and not DAEMON:
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
    from dia_assets.agents.schema_creator.attempt import Attempt as _Attempt
    _begin = _Attempt.begin.__func__
    def _held(cls, *args, **kwargs):
        hold = os.environ["DIA_TEST_PAUSE_FILE"] + "-start"
        if os.path.exists(hold):
            with open(hold + ".reached", "w") as fh:
                fh.write(str(os.getpid()))
            while os.path.exists(hold):
                time.sleep(0.1)
        return _begin(cls, *args, **kwargs)
    _Attempt.begin = classmethod(_held)
'''
IN_PROGRESS = {DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
               DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING}
DATA_SENSORS = ("new_data_sensor", "drift_sensor")


def loop_floor_patchable() -> bool:
    """The daemon's sensor loop floor is where this harness lowers it (else a replay still
    passes, several times slower)."""
    import dagster._daemon.sensor as sensor_daemon

    return isinstance(getattr(sensor_daemon, "MIN_INTERVAL_LOOP_TIME", None), (int, float))


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
        self.pause_start = base / "pause-load-start"
        self.env = {**os.environ, "DIA_SENSOR_INTERVAL_S": "1", **env, "DAGSTER_HOME": str(self.home),
                    "DIA_WORKSPACE": str(ws), "DIA_DATA_DIR": str(data), "DIA_TEST_PAUSE_FILE": str(self.pause),
                    "DIA_TEST_SENSOR_LOOP_S": str(SENSOR_LOOP_S), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                    "PYTHONPATH": os.pathsep.join([str(ROOT), str(hooks)])}
        for name in ("DIA_MODEL", "DIA_WAREHOUSE", "DIA_EXECUTOR"):
            self.env.pop(name, None)
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

    def runs(self, job: str | None = None, **tags: str) -> list[DagsterRun]:
        """Oldest first."""
        found = self.instance.get_runs(filters=RunsFilter(job_name=job, tags=tags or None))
        return list(reversed(found))

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:]) if self.log.exists() else ""

    def describe(self) -> str:
        return str([(r.job_name, r.status.value, r.tags.get("dia/change") or r.tags.get("dia/trigger"))
                    for r in self.runs()])

    def wait_for(self, what: str, done: Callable[[], bool], timeout_s: float = 120) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"the daemon exited ({self.proc.returncode}):\n{self.log_tail()}")
            if done():
                return
            time.sleep(0.25)
        raise AssertionError(f"timed out waiting for {what}; runs: {self.describe()}\n{self.log_tail()}")

    def ticks(self, sensor: str, after: float | None = None, limit: int = 5) -> list[InstigatorTick]:
        """The newest ticks of `sensor` (that started after `after`), newest first."""
        states = [s for s in self.instance.all_instigator_state(instigator_type=InstigatorType.SENSOR)
                  if s.instigator_name == sensor]
        if not states:
            return []
        return list(self.instance.get_ticks(states[0].instigator_origin_id, states[0].selector_id,
                                            after=after, limit=limit))

    def completed_ticks(self, sensor: str, after: float) -> int:
        """Ticks of `sensor` that started after `after` (a timestamp) and finished."""
        return sum(1 for t in self.ticks(sensor, after) if t.status != TickStatus.STARTED)

    def last_tick(self, sensor: str) -> InstigatorTick:
        """The newest finished tick of `sensor`."""
        return next(t for t in self.ticks(sensor, limit=3) if t.status != TickStatus.STARTED)

    def last_end(self) -> float:
        """When the last run ended (0 before any)."""
        records = self.instance.get_run_records(limit=20)
        return max([r.end_time or r.update_timestamp.timestamp() for r in records] or [0.0])

    def quiet(self, sensors: tuple[str, ...] = DATA_SENSORS, timeout_s: float = 120) -> None:
        """Until no run is in progress and each of `sensors` completed a tick that started after
        the last run ended: the daemon has reacted to everything there is to react to."""
        def done() -> bool:
            if any(r.status in IN_PROGRESS for r in self.runs()):
                return False
            since = max(self.last_end(), self.started_at)
            return all(self.completed_ticks(s, since) >= 1 for s in sensors)
        self.wait_for("the daemon to settle", done, timeout_s)

    def builds_since(self, before: int, timeout_s: float = 120) -> list[DagsterRun]:
        """The build_job runs started since `before` of them existed, once the daemon is quiet."""
        self.wait_for("a build", lambda: len(self.runs("build_job")) > before, timeout_s)
        self.quiet(timeout_s=timeout_s)
        return self.runs("build_job")[before:]

    @property
    def started_at(self) -> float:
        return getattr(self, "_started_at", 0.0)

    def mark(self) -> float:
        """A point in time for `quiet`: ticks before it do not count."""
        self._started_at = time.time()
        return self._started_at
