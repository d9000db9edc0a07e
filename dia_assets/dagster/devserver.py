"""`dia ui`: `dg dev` that stops cleanly on Ctrl-C, children and embedded PostgreSQL included.

`dg dev` (Dagster's project CLI, configured by `[tool.dg]` in pyproject.toml) is what Dagster
now recommends; `dagster dev -w workspace.yaml` (the same code location) is the fallback when
dagster-dg-cli is not installed. Either runs the webserver, the daemon and a code server; runs and the memory store
start more processes, and the embedded PostgreSQL (pgserver) is started by whichever process
first needs it, which then keeps it alive. A Ctrl-C in a terminal reaches all of them at
once, in the middle of their own shutdowns, and a process that ignores it keeps the group
alive. Here `dagster dev` gets its own session; one Ctrl-C (or SIGTERM) is forwarded as
SIGINT to the whole group, then, after a grace period, the embedded PostgreSQL gets a fast
shutdown and whatever is left of the group is terminated, then killed.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

from dia_assets.platform.settings import get_settings

# First on the PYTHONPATH of `dagster dev`: its sitecustomize starts run workers warm and shortens
# the backfill daemon's loop (dia_assets/boot/sitecustomize.py says why)
BOOT = Path(__file__).resolve().parents[1] / "boot"


def boot_env(env: dict[str, str] | None = None) -> dict[str, str]:
    """`env` (default this process's) with dia_assets/boot first on PYTHONPATH."""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BOOT), env.get("PYTHONPATH", "")) if p)
    return env


def _group(pgid: int) -> list[psutil.Process]:
    out = []
    for proc in psutil.process_iter():
        try:
            if os.getpgid(proc.pid) == pgid and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except (ProcessLookupError, psutil.Error):
            continue
    return out


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def stop_postgres(pgdata: Path, timeout_s: float = 10.0) -> list[int]:
    """Fast shutdown (SIGINT) of the postmaster working in `pgdata`; its backends follow."""
    from dia_assets.platform.memory.server import live_postgres_in

    pids = live_postgres_in(pgdata.resolve()) if pgdata.exists() else []
    postmasters = [p for p in pids if psutil.Process(p).ppid() not in pids]
    for pid in postmasters:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGINT)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and live_postgres_in(pgdata.resolve()):
        time.sleep(0.1)
    return postmasters


def shutdown(proc: subprocess.Popen, pgdata: Path, grace_s: float | None = None) -> None:
    """SIGINT to the group, wait (`grace_s`, default DIA_UI_GRACE_S), stop PostgreSQL, then
    SIGTERM and SIGKILL what is left."""
    grace_s = get_settings().ui_grace_s if grace_s is None else grace_s
    _signal_group(proc.pid, signal.SIGINT)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)
    stop_postgres(pgdata)
    for sig, wait_s in ((signal.SIGTERM, 3.0), (signal.SIGKILL, 1.0)):
        left = _group(proc.pid)
        if not left and proc.poll() is not None:
            break
        _signal_group(proc.pid, sig)
        psutil.wait_procs(left, timeout=wait_s)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=1)


def _default_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)


def _tool(name: str) -> str | None:
    """A console script of this Python's environment, else one on PATH."""
    beside = Path(sys.executable).with_name(name)
    return str(beside) if beside.exists() else shutil.which(name)


def dev_command(args: Sequence[str] = ()) -> list[str]:
    """`dg dev` when dagster-dg-cli is installed, else `dagster dev -w workspace.yaml` (said in
    one line on stderr). Both take -p/--port and -h/--host."""
    dg = _tool("dg")
    if dg:
        return [dg, "dev", *args]
    print("dia ui: dg (dagster-dg-cli) is not installed; running `dagster dev -w workspace.yaml` instead",
          file=sys.stderr)
    return [_tool("dagster") or "dagster", "dev", "-w", "workspace.yaml", *args]


def run(args: Sequence[str] = (), pgdata: Path | None = None) -> int:
    from dia_assets.platform.memory.connection import default_pgdata

    pgdata = pgdata or default_pgdata()
    cmd = dev_command(args)
    # Default dispositions in the child: a shell starts background jobs with SIGINT ignored,
    # and an ignored SIGINT is inherited across exec, so `dagster dev` would never hear it.
    proc = subprocess.Popen(cmd, start_new_session=True, env=boot_env(),
                            preexec_fn=_default_signals)  # noqa: PLW1509
    stopping = False

    def on_signal(signum: int, frame: object) -> None:  # noqa: ARG001
        nonlocal stopping
        stopping = True

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while proc.poll() is None and not stopping:
            time.sleep(0.2)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        print(f"\nstopping {Path(cmd[0]).name} dev and the embedded PostgreSQL ...", file=sys.stderr, flush=True)
        shutdown(proc, pgdata)
    left = _group(proc.pid)
    if left:
        print(f"still running after shutdown: {[p.pid for p in left]}", file=sys.stderr)
    return 0 if stopping else (proc.returncode or 0)
