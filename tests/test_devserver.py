"""`dia ui` (issue 16): one Ctrl-C stops `dagster dev`, every child and the embedded PostgreSQL."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from dia_assets.dagster.devserver import _group, shutdown
from dia_assets.platform.memory.server import live_postgres_in
from tests.memory_fixtures import ROOT

# Stands in for `dagster dev`: holds the embedded server like a code server or run worker
# does, ignores SIGINT and SIGTERM, and leaves a child that ignores them too.
_STUBBORN = """
import signal, subprocess, sys, time
from pathlib import Path
from dia_assets.platform.memory import MemoryStore
from tests.memory_fixtures import HashEmbedder
for s in (signal.SIGINT, signal.SIGTERM):
    signal.signal(s, signal.SIG_IGN)
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time\\nfor s in (signal.SIGINT, signal.SIGTERM): signal.signal(s, signal.SIG_IGN)\\ntime.sleep(600)"])
store = MemoryStore.open(pgdata=Path(sys.argv[1]), embedder=HashEmbedder())
store.list_items()
(Path(sys.argv[1]).parent / "ready").touch()
time.sleep(600)
"""


def test_shutdown_stops_the_group_and_the_embedded_postgres():
    base = Path(tempfile.mkdtemp(prefix="dia-ui-"))
    pgdata = base / "pgdata"
    proc = subprocess.Popen([sys.executable, "-c", _STUBBORN, str(pgdata)], cwd=ROOT, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not (base / "ready").exists() and time.monotonic() < deadline:
            assert proc.poll() is None, "the stand-in exited early"
            time.sleep(0.2)
        assert live_postgres_in(pgdata.resolve())
        assert len(_group(proc.pid)) >= 2
        started = time.monotonic()
        shutdown(proc, pgdata, grace_s=2)
        assert time.monotonic() - started < 20
        assert proc.poll() is not None
        assert _group(proc.pid) == []
        assert live_postgres_in(pgdata.resolve()) == []
        assert not (pgdata / "postmaster.pid").exists()  # a clean PostgreSQL shutdown
    finally:
        for p in _group(proc.pid):
            p.kill()
        psutil.wait_procs(_group(proc.pid), timeout=5)
        shutil.rmtree(base, ignore_errors=True)


def test_dagster_dev_hears_sigint_even_when_started_from_a_background_job():
    """A shell starts background jobs with SIGINT ignored; `dia ui` resets it for its child."""
    import signal

    from dia_assets.dagster.devserver import _default_signals

    probe = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        ignored = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True).stdout.strip()
        reset = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                               preexec_fn=_default_signals).stdout.strip()  # noqa: PLW1509
    finally:
        signal.signal(signal.SIGINT, previous)
    assert (ignored, reset) == ("False", "True")
