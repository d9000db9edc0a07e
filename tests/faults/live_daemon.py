"""A real `dagster-daemon run` (sensors, run queue, runs in their own processes) over a temp
workspace, for the live replays: started in its own session so a test can kill it whole, the
way a crash or `kill -9` of the daemon does.

`sitecustomize.py` in HOOKS is imported by every Python process the daemon starts:
- in the daemon itself, the sensor loop's floor (Dagster's `MIN_INTERVAL_LOOP_TIME`, 5 s) and
  the run queue's dequeue interval (`dequeue_interval_seconds`, an int in the config) are
  lowered to DIA_TEST_SENSOR_LOOP_S: each reaction waits for a loop or two. The sensors' own
  code is the product's, unchanged. Its workspace reload (Dagster's RELOAD_WORKSPACE_INTERVAL,
  60 s: a new code server every minute) is raised to DIA_TEST_WORKSPACE_RELOAD_S, so the daemon
  keeps the code location it started with (WORKSPACE_RELOAD_S says why);
- in the code server, run workers are started from a forkserver that imported WARM_MODULES
  once (Dagster starts them with "spawn", so each run paid Dagster's, DuckDB's, sqlglot's, ...
  imports: 1.5-3.5 s instead of 18-30 s per run start on a machine at load 30). They are still
  runs the daemon dequeues and the code server launches, one process each, and each loads the
  code location (dia_assets.definitions) afresh. The forkserver also fills the per-process caches
  a build reads from shipped files (WARM_CACHES: the catalog's word lists, WordLlama's weights);
- in the daemon, code server and run workers (and the test process), Dagster's SQLite storage
  reuses one engine per database file instead of building one per query (sqlite_engines.py);
- in the code server and run workers (not the compute-log watcher each step starts, a
  `python watch_orphans.py` that would import the build each time), with DIA_TEST_PAUSE_FILE
  set and that file present, the warehouse step stops right before it loads, writes `<pause file>.reached` with its pid and waits, so a test
  can kill it mid-build at a known step; with `<pause file>-start` present, a build stops the
  same way before it records its attempt (before its first step), writing `-start.reached`.

The instance, data folder and workspace live in memory where the machine has it (`scratch()`):
every tick write and run event is a SQLite commit, and a flush to a busy disk is on the path of
every reaction.

Every wait follows something Dagster records (`settle()`): the data sensor's stored cursor
covering the folder as it is, with a tick that requested nothing after the last build ended; the
drift sensor's cursor at the newest interpretation and every run requested for it (found by the
run keys it gives them) ended; run statuses terminal. A step's runs are told apart by run id
(`run_ids()` before the change) and by the tags the sensors give them (`requested()`: the
data sensor's pending change), never by counting runs or taking the latest. No tick is counted
and nothing sleeps to synchronise; a deadline (DIA_LIVE_DEADLINE_S, 300 s) only bounds a hang,
and its failure says what was awaited and what was seen. Dagster's gRPC deadline
(DAGSTER_GRPC_TIMEOUT_SECONDS, 60 s by default) is raised the same way: on a loaded machine a
run's start (its process, the code location's load) can take longer than a minute, and
Dagster then fails the run before it began."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from dagster import DagsterInstance, DagsterRun, DagsterRunStatus, RunsFilter
from dagster._core.instance.ref import InstanceRef
from dagster._core.scheduler.instigation import (
    InstigatorState,
    InstigatorTick,
    InstigatorType,
    TickStatus,
)

from dia_assets.agents.adaptation.data_cursor import DataCursor
from dia_assets.agents.adaptation.snapshot import snapshot
from dia_assets.dagster.sensors.run_outcome import REQUEST_TAG
from dia_assets.platform.files.discover import content_hash
from tests.conftest import ROOT
from tests.faults.sqlite_engines import reuse_sqlite_engines

BIN = Path(sys.executable).parent
SENSOR_LOOP_S = 0.5  # the sensors' own minimum interval stays 1 s (DIA_SENSOR_INTERVAL_S)
# The daemon reloads its code location every 60 s (Dagster's RELOAD_WORKSPACE_INTERVAL): a new
# code server, loaded from the workspace as it is then (one `warehouse` asset before the first
# build, `warehouse/<table>` after). Mid-replay that swaps the location under a step at a time
# no test chooses, and the new server starts its runs' forkserver cold. A replay keeps the
# location the daemon started with (loaded before the first build); a restart (LiveDaemon.kill,
# start) loads it afresh, as a real restart does.
WORKSPACE_RELOAD_S = 24 * 3600
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
run_launcher:
  module: dia_assets.dagster.launcher
  class: LocalRunLauncher
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
    from dagster._core.run_coordinator.queued_run_coordinator import QueuedRunCoordinator as _Queue
    _sensor_daemon.MIN_INTERVAL_LOOP_TIME = float(os.environ["DIA_TEST_SENSOR_LOOP_S"])
    _Queue.dequeue_interval_seconds = property(lambda self: float(os.environ["DIA_TEST_SENSOR_LOOP_S"]))
if os.environ.get("DIA_TEST_WORKSPACE_RELOAD_S") and DAEMON:
    import dagster._daemon.controller as _controller
    _controller.RELOAD_WORKSPACE_INTERVAL = float(os.environ["DIA_TEST_WORKSPACE_RELOAD_S"])
CODE_SERVER = sys.argv[:3] == ["-m", "api", "grpc"]
# the processes that run steps: the code server and the run workers (forked from its forkserver,
# or spawned without DIA_TEST_WARM_RUNS); not the compute-log watchers every step starts
# (`python watch_orphans.py`), which would each import the build for nothing
RUNS = CODE_SERVER or "multiprocessing" in " ".join(getattr(sys, "orig_argv", sys.argv))
if os.environ.get("DIA_TEST_SQLITE_ENGINES") and (DAEMON or RUNS):
    try:
        from tests.faults.sqlite_engines import reuse_sqlite_engines
        reuse_sqlite_engines()
    except Exception as err:  # Dagster moved them: the replay runs as Dagster does, slower
        print(f"sqlite_engines: not applied ({type(err).__name__}: {err})", file=sys.stderr)
if os.environ.get("DIA_TEST_WARM_RUNS") and CODE_SERVER:
    import multiprocessing
    from dagster._grpc import server as _server
    _init = _server.DagsterApiServer.__init__
    def _warm(self, *args, **kwargs):
        _init(self, *args, **kwargs)
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(os.environ["DIA_TEST_WARM_RUNS"].split(","))
        self._mp_ctx = ctx
        # started now rather than by the first run (whose start_run call would wait for the
        # preload), so the first build does not pay it inside the daemon's gRPC deadline
        import threading
        from multiprocessing import forkserver
        threading.Thread(target=forkserver.ensure_running, daemon=True).start()
    _server.DagsterApiServer.__init__ = _warm
if os.environ.get("DIA_TEST_PAUSE_FILE") and RUNS:
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
# Preloaded last by the run forkserver (WARM_MODULES): what every build loads from the package's
# own files into a per-process cache (the catalog's WordNet extract and word list, WordLlama's
# weights: about 1.3 s of CPU per run, paid again by each worker). Pure functions of shipped files,
# filled once before the fork, as in a long-lived worker; the runs still call them.
WARM_CACHES = '''
try:
    from dia_assets.agents.catalog.column_text import vocabulary
    from dia_assets.agents.catalog.lexicon import abbreviations, lexicon
    from dia_assets.platform.embeddings import _load_wordllama

    lexicon(), abbreviations(), vocabulary(), _load_wordllama()
except Exception as err:  # a run fills them itself, as without this module
    import sys
    print(f"dia_test_warm: not preloaded ({type(err).__name__}: {err})", file=sys.stderr)
'''
TERMINAL = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
NEW_DATA, DRIFT = "new_data_sensor", "drift_sensor"
DEADLINE_S = float(os.environ.get("DIA_LIVE_DEADLINE_S", "300"))
T = TypeVar("T")
# imported once by the code server's run forkserver instead of by every run: Dagster with its
# instance storage, third-party packages and the framework-free agents (no Dagster definitions,
# nothing read from the workspace at import: each run still loads the code location itself)
WARM_MODULES = ("dagster", "dagster._grpc.impl", "dagster._core.execution.api", "dagster._core.instance.factory",
                "dagster._core.storage.sqlite_storage", "dagster._core.storage.runs.sqlite",
                "dagster._core.storage.event_log.sqlite", "dagster._core.storage.schedules.sqlite",
                "dagster._core.storage.local_compute_log_manager", "dagster._core.secrets.env_file",
                "dagster._daemon.controller", "dagster._core.run_coordinator.queued_run_coordinator",
                "alembic.runtime.migration", "sqlalchemy", "upath", "duckdb", "pyarrow", "sqlglot", "psycopg", "psutil",
                "numpy", "scipy.stats", "yaml", "pydantic", "dia_assets.agents.interpreter",
                "dia_assets.agents.schema_creator.build", "dia_assets.agents.query.loop",
                "dia_assets.agents.catalog.refresh", "dia_assets.agents.memory", "wordllama", "tokenizers",
                "safetensors", "zstandard", "dia_test_warm")


SHM_NEEDED = 4 * 1024**3  # bytes free in /dev/shm before a replay runs there


@contextmanager
def scratch(tmp_path: Path) -> Iterator[Path]:
    """Where a replay keeps its Dagster instance, data folder and workspace: in memory
    (/dev/shm) when the machine has it, else `tmp_path`. Dagster's SQLite storage commits (and
    flushes to disk) a transaction per tick write and per run event, hundreds per replay: on a
    disk shared with other jobs each flush waited tens of milliseconds, on the path of every
    reaction. The files, renames, locks and kills are the same in memory. On exit the daemon's
    log is kept in `tmp_path`."""
    shm = Path("/dev/shm")
    # a container's /dev/shm is often 64 MB: a replay's grown files need more than that
    if not (shm.is_dir() and os.access(shm, os.W_OK) and shutil.disk_usage(shm).free >= SHM_NEEDED):
        yield tmp_path
        return
    base = Path(tempfile.mkdtemp(prefix="dia-live-", dir=shm))
    try:
        yield base
    finally:
        if (base / "daemon.log").exists():
            shutil.copy(base / "daemon.log", tmp_path / "daemon.log")
        shutil.rmtree(base, ignore_errors=True)


def loop_floor_patchable() -> bool:
    """The daemon's sensor loop floor and dequeue interval are where this harness lowers them
    (else a replay still passes, several times slower), and its workspace reload interval where
    this harness raises it (else a reload lands mid-replay at a moment the test does not choose)."""
    import dagster._daemon.controller as controller
    import dagster._daemon.sensor as sensor_daemon
    from dagster._core.run_coordinator.queued_run_coordinator import QueuedRunCoordinator

    return isinstance(getattr(sensor_daemon, "MIN_INTERVAL_LOOP_TIME", None), (int, float)) and isinstance(
        getattr(QueuedRunCoordinator, "dequeue_interval_seconds", None), property) and isinstance(
        getattr(controller, "RELOAD_WORKSPACE_INTERVAL", None), (int, float))


class LiveDaemon:
    def __init__(self, base: Path, data: Path, ws: Path, env: dict[str, str]):
        self.base, self.data, self.ws = base, data, ws
        self.home = base / "dagster_home"
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "dagster.yaml").write_text(DAGSTER_YAML)
        hooks = base / "hooks"
        hooks.mkdir(exist_ok=True)
        (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE)
        (hooks / "dia_test_warm.py").write_text(WARM_CACHES)
        self.pause = base / "pause-load"
        self.pause_start = base / "pause-load-start"
        self.env = {**os.environ, "DIA_SENSOR_INTERVAL_S": "1", **env, "DAGSTER_HOME": str(self.home),
                    "DIA_WORKSPACE": str(ws), "DIA_DATA_DIR": str(data), "DIA_TEST_PAUSE_FILE": str(self.pause),
                    "DIA_TEST_SENSOR_LOOP_S": str(SENSOR_LOOP_S), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                    "DIA_TEST_WARM_RUNS": ",".join(WARM_MODULES), "DIA_TEST_SQLITE_ENGINES": "1",
                    "DIA_TEST_WORKSPACE_RELOAD_S": str(WORKSPACE_RELOAD_S),
                    "DAGSTER_GRPC_TIMEOUT_SECONDS": str(int(DEADLINE_S)),
                    "PYTHONPATH": os.pathsep.join([str(ROOT), str(hooks)])}
        for name in ("DIA_MODEL", "DIA_WAREHOUSE", "DIA_EXECUTOR"):
            self.env.pop(name, None)
        self.proc: subprocess.Popen | None = None
        self.log = base / "daemon.log"
        self.instance = DagsterInstance.from_ref(InstanceRef.from_dir(str(self.home)))
        self._restore_engines = reuse_sqlite_engines()  # this process polls the same storage (undone by stop)
        self._sensor_ids: dict[str, tuple[str, str]] = {}  # name -> (origin id, selector id)
        self.timeline: list[tuple[str, float]] = []  # (what was awaited, seconds): printed by the fixtures

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
        self._restore_engines()
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

    def wait_for(self, what: str, done: Callable[[], T | None], seen: Callable[[], str] | None = None,
                 timeout_s: float = DEADLINE_S) -> T:
        """Poll `done` until it returns a value (not None, not False) and return it; the deadline
        only bounds a hang. On timeout, say what was awaited and what was seen (`seen`), the runs
        and the daemon's log."""
        begun = time.monotonic()
        deadline = begun + timeout_s
        while True:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"the daemon exited ({self.proc.returncode}) while waiting for {what}:\n"
                                     f"{self.log_tail()}")
            value = done()
            if value is not None and value is not False:
                self.timeline.append((what, time.monotonic() - begun))
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}; seen: "
                                     f"{seen() if seen else '-'}; runs: {self.describe()}\n{self.log_tail()}")
            time.sleep(0.2)

    def sensor_state(self, sensor: str) -> InstigatorState | None:
        """Read by its ids once known (one row; the polls read it several times a second),
        else found among all sensor states."""
        if sensor in self._sensor_ids:
            state = self.instance.get_instigator_state(*self._sensor_ids[sensor])
            if state is not None:
                return state
        states = [s for s in self.instance.all_instigator_state(instigator_type=InstigatorType.SENSOR)
                  if s.instigator_name == sensor]
        if states:
            self._sensor_ids[sensor] = (states[0].instigator_origin_id, states[0].selector_id)
        return states[0] if states else None

    def cursor(self, sensor: str) -> str | None:
        """The cursor the daemon stored for `sensor` (at the end of its last finished tick)."""
        state = self.sensor_state(sensor)
        return state.instigator_data.cursor if state and state.instigator_data else None

    def ticks(self, sensor: str, after: float | None = None, limit: int = 10) -> list[InstigatorTick]:
        """The newest ticks of `sensor` (that started after `after`), newest first."""
        state = self.sensor_state(sensor)
        if state is None:
            return []
        return list(self.instance.get_ticks(state.instigator_origin_id, state.selector_id, after=after, limit=limit))

    def describe_ticks(self, sensor: str, limit: int = 4) -> str:
        return f"{sensor} ticks (newest first): " + "; ".join(
            f"{t.status.value}@{t.timestamp:.1f} runs={len(t.run_ids)} {t.skip_reason or ''}"
            f"{' error: ' + t.error.message.strip()[:200] if t.error else ''}" for t in self.ticks(sensor, limit=limit))

    def finished_ticks(self, sensor: str, after: float) -> list[InstigatorTick]:
        """The finished ticks of `sensor` that started after `after`, newest first."""
        return [t for t in self.ticks(sensor, after=after, limit=100) if t.status != TickStatus.STARTED]

    def ended(self, run_id: str) -> DagsterRun:
        """The run, once its status is terminal."""
        def done() -> DagsterRun | None:
            run = self.instance.get_run_by_id(run_id)
            return run if run is not None and run.status in TERMINAL else None
        return self.wait_for(f"run {run_id} to reach a terminal status", done,
                             lambda: str(getattr(self.instance.get_run_by_id(run_id), "status", None)))

    def all_ended(self) -> list[DagsterRun]:
        """Every run, once none is queued or in progress."""
        def done() -> list[DagsterRun] | None:
            runs = self.runs()
            return runs if all(r.status in TERMINAL for r in runs) else None
        return self.wait_for("every run to reach a terminal status", done)

    def end_time(self, runs: list[DagsterRun]) -> float:
        """When the last of `runs` ended (0 for none)."""
        ids = {r.run_id for r in runs}
        records = self.instance.get_run_records(filters=RunsFilter(run_ids=list(ids))) if ids else []
        return max([r.end_time or r.update_timestamp.timestamp() for r in records] or [0.0])

    def run_ids(self, job: str | None = None) -> set[str]:
        """Every run (of `job`) the instance holds: what a step's own runs are told apart from."""
        return {r.run_id for r in self.runs(job)}

    def requested(self) -> list[DagsterRun]:
        """The runs of the change new_data_sensor's stored cursor has pending (found by their
        `dia/request` tag, the same on every retry), oldest first; none when nothing is pending."""
        cursor = DataCursor.parse(self.cursor(NEW_DATA))
        return self.runs("build_job", **{REQUEST_TAG: cursor.pending.key}) if cursor and cursor.pending else []

    def data_at_rest(self) -> None:
        """Until new_data_sensor has taken in the data folder as it is now: its stored cursor is
        at this folder (done, or the change it last asked for and gave up on), the runs it
        requested for that change ended, and a tick that started after they ended (and after
        `mark`) requested nothing: the outcome of every build is absorbed and no retry is coming."""
        folder = snapshot(self.data)

        def done() -> bool:
            cursor = DataCursor.parse(self.cursor(NEW_DATA))
            if cursor is None or (cursor.pending.snapshot if cursor.pending else cursor.done) != folder:
                return False
            builds = self.runs("build_job")
            if any(r.status not in TERMINAL for r in builds):
                return False
            ids = {r.run_id for r in builds}
            since = max(self.end_time(builds), self.started_at)
            quiet = [t for t in self.ticks(NEW_DATA, after=since) if t.status == TickStatus.SKIPPED]
            # that tick requested nothing, and no build appeared while this was read
            return bool(quiet) and {r.run_id for r in self.runs("build_job")} == ids

        def seen() -> str:
            cursor = DataCursor.parse(self.cursor(NEW_DATA))
            where = None if cursor is None else ("pending", cursor.pending.run_key, cursor.pending.tries) \
                if cursor.pending else ("done == folder", cursor.done == folder)
            return f"cursor {where}; {self.describe_ticks(NEW_DATA)}"
        self.wait_for("new_data_sensor to take in the data folder (its builds ended and absorbed)", done, seen)

    def drift_runs(self, version: str) -> list[DagsterRun]:
        """The runs drift_sensor requested for the interpretation with content hash `version`:
        their run keys carry its first 16 characters (adaptation.react.react)."""
        tag = version[:16]
        return [r for r in self.runs(**{"dagster/sensor_name": DRIFT})
                if r.tags.get("dagster/run_key", "").split("-")[2:3] == [tag]]

    def drift_at_rest(self) -> None:
        """Until drift_sensor's stored cursor is the newest interpretation's content hash (the tick
        that stored it submitted its runs first) and every run it requested for it has ended."""
        path = self.ws / "interpretation.json"
        if not path.exists():
            return
        version = content_hash(path)
        self.wait_for("drift_sensor to take in the newest interpretation", lambda: self.cursor(DRIFT) == version,
                      lambda: f"cursor {self.cursor(DRIFT)!r} (want {version!r}); {self.describe_ticks(DRIFT)}")
        for run in self.drift_runs(version):
            self.ended(run.run_id)

    def settle(self) -> None:
        """Until the daemon has reacted to everything there is: the data sensor took in the folder,
        the drift sensor the newest interpretation (and their runs ended), and no run is left in
        progress; again while a pass saw new runs appear."""
        while True:
            before = self.run_ids()
            self.data_at_rest()
            self.drift_at_rest()
            self.all_ended()
            if self.run_ids() == before:
                return

    def builds_since(self, known: set[str]) -> list[DagsterRun]:
        """The build_job runs that are not in `known` (run ids, `run_ids()` before a change),
        oldest first, once the daemon settled."""
        self.settle()
        return [r for r in self.runs("build_job") if r.run_id not in known]

    def report_timeline(self) -> str:
        """What was awaited and for how long: where a replay's time goes."""
        total = sum(seconds for _, seconds in self.timeline)
        records = sorted(self.instance.get_run_records(), key=lambda r: r.create_timestamp)
        runs = [f"{r.dagster_run.job_name} {r.dagster_run.status.value}: queued "
                f"{(r.start_time or 0) - r.create_timestamp.timestamp():.1f} s, ran "
                f"{(r.end_time or 0) - (r.start_time or 0):.1f} s" for r in records]
        return "\n".join([f"live waits: {len(self.timeline)}, {total:.1f} s in all"]
                         + [f"{seconds:6.1f} s  {what}" for what, seconds in self.timeline]
                         + [f"runs: {len(records)}"] + runs)

    @property
    def started_at(self) -> float:
        return getattr(self, "_started_at", 0.0)

    def mark(self) -> float:
        """A point in time for `data_at_rest`: the data sensor's ticks before it do not count
        (call it right after a change, so a tick that judged the folder saw the change)."""
        self._started_at = time.time()
        return self._started_at
