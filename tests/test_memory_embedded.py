"""The embedded server's life: shared by processes, stopped cleanly, restarted after a
crash, unbothered by stale pid files; and WordLlama loading with networking disabled."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from dia_assets.platform.memory import Kind, MemoryStore, NewMemory, embedded_pg
from dia_assets.platform.memory.connection import ConnectionTarget
from tests.memory_fixtures import ROOT, HashEmbedder, run_python


@pytest.fixture
def pgdata() -> Iterator[Path]:
    """A private data folder (see memory_fixtures.pg_server on why not pytest's tmp)."""
    base = Path(tempfile.mkdtemp(prefix="dia-memory-embedded-"))
    yield base / "pgdata"
    shutil.rmtree(base, ignore_errors=True)


def _lesson(i: int) -> NewMemory:
    return NewMemory(
        kind=Kind.JOIN, title=f"rule {i}", body=f"body {i}", probe_sql=f"SELECT {i}", scope="db-a"
    )


def _postmaster_pid(pgdata: Path) -> int | None:
    pidfile = pgdata / "postmaster.pid"
    return int(pidfile.read_text().splitlines()[0]) if pidfile.exists() else None


def _release(store: MemoryStore) -> None:
    """Stop this process's handle on the server so the folder can be removed."""
    store.close()
    embedded = store.target._embedded
    if embedded is not None:
        embedded.stop()


_WRITER = """
import sys, time, os
from pathlib import Path
from dia_assets.platform.memory import MemoryStore, NewMemory, Kind
from tests.memory_fixtures import HashEmbedder
pgdata, worker = Path(sys.argv[1]), int(sys.argv[2])
store = MemoryStore.open(pgdata=pgdata, embedder=HashEmbedder())
store.insert(NewMemory(kind=Kind.JOIN, title=f"w{worker}", body=f"worker {worker}",
                       probe_sql=f"SELECT {worker}", scope="db-a"))
pid = int((pgdata / "postmaster.pid").read_text().split()[0])
(pgdata.parent / f"ready-{worker}").touch()
deadline = time.time() + 60  # all three hold a handle before any leaves
while len(list(pgdata.parent.glob("ready-*"))) < 3 and time.time() < deadline:
    time.sleep(0.05)
time.sleep(0.3 * worker)  # then they leave one by one
print(pid)
"""


def test_processes_share_one_server_which_stops_with_the_last(pgdata: Path) -> None:
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(pgdata), str(w)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(3)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    pids = {int(out.strip().splitlines()[-1]) for out, _ in outputs}
    assert len(pids) == 1  # one server, started once, used by all three
    # the last process out stopped it cleanly: no pid file, no process
    assert _postmaster_pid(pgdata) is None
    server_pid = pids.pop()
    assert (
        not psutil.pid_exists(server_pid)
        or psutil.Process(server_pid).status() == psutil.STATUS_ZOMBIE
    )
    assert json.loads((pgdata / ".handle_pids.json").read_text()) == []
    store = MemoryStore.open(pgdata=pgdata, embedder=HashEmbedder())
    assert sorted(i.title for i in store.list_items()) == ["w0", "w1", "w2"]
    _release(store)


def test_a_crashed_server_is_restarted_on_next_use(pgdata: Path) -> None:
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    store = MemoryStore.open(pgdata=pgdata, embedder=HashEmbedder())
    first = store.insert(_lesson(1)).id
    old_pid = _postmaster_pid(pgdata)
    assert old_pid is not None
    os.kill(old_pid, signal.SIGKILL)
    psutil.Process(old_pid).wait(10) if psutil.pid_exists(old_pid) else None
    second = store.insert(_lesson(2)).id  # reconnects, restarting the server
    new_pid = _postmaster_pid(pgdata)
    assert new_pid not in (None, old_pid)
    assert [i.id for i in store.get_many([first, second])] == [first, second]  # crash-safe
    # stopped cleanly behind our back (an operator's pg_ctl stop): started again too
    # the server's own pgdata is the real folder: as root a private parent puts the data
    # under DIA_PGDATA_HOME (placement.py)
    embedded_pg.pg_ctl(store.target._embedded._server, "-w", "stop")
    assert _postmaster_pid(pgdata) is None
    assert store.insert(_lesson(3)).action == "inserted"
    assert _postmaster_pid(pgdata) is not None
    _release(store)
    assert _postmaster_pid(pgdata) is None


def test_a_stale_pid_file_and_dead_handles_are_handled(pgdata: Path) -> None:
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    done = run_python(
        "import sys\nfrom dia_assets.platform.memory import MemoryStore, NewMemory, Kind\n"
        "from tests.memory_fixtures import HashEmbedder\n"
        "s = MemoryStore.open(pgdata=sys.argv[1], embedder=HashEmbedder())\n"
        "s.insert(NewMemory(kind=Kind.JOIN, title='t', body='b', probe_sql='SELECT 1'))\n".replace(
            "sys.argv[1]", repr(str(pgdata))
        )
    )
    assert done.returncode == 0, done.stderr
    assert _postmaster_pid(pgdata) is None
    # a process killed mid-run leaves its pid in pgserver's list, and its postmaster.pid
    # may name a pid that now belongs to an unrelated program
    squatter = subprocess.Popen(["sleep", "60"])
    dead = subprocess.Popen(["true"])
    dead.wait()
    try:
        lines = [
            str(squatter.pid),
            str(pgdata),
            str(int(time.time())),
            "5432",
            str(pgdata),
            "",
            "1 2",
            "ready",
        ]
        (pgdata / "postmaster.pid").write_text("\n".join(lines) + "\n")
        (pgdata / ".handle_pids.json").write_text(json.dumps([dead.pid]))
        store = MemoryStore.open(pgdata=pgdata, embedder=HashEmbedder())
        assert [i.title for i in store.list_items()] == ["t"]
        assert _postmaster_pid(pgdata) not in (None, squatter.pid)
        assert dead.pid not in json.loads((pgdata / ".handle_pids.json").read_text())
        _release(store)
    finally:
        squatter.kill()
        squatter.wait()


def test_embedded_target_describes_its_folder(pgdata: Path) -> None:
    assert (
        ConnectionTarget(pgdata=pgdata).describe() == f"embedded PostgreSQL in {pgdata.resolve()}"
    )


_OFFLINE = """
import socket
def _refuse(*args, **kwargs):
    raise OSError("network disabled by test")
socket.socket.connect = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
from dia_assets.platform.embeddings import WordLlamaEmbedder
e = WordLlamaEmbedder()
v = e.embed(["count schools with COUNT(DISTINCT pk)", "count entities through a join with distinct keys",
             "the weather in Paris is mild"])
near, far = float(v[0] @ v[1]), float(v[0] @ v[2])
print(e.name, e.dim, v.shape[1], near > far)
"""


def test_wordllama_loads_and_embeds_with_networking_disabled() -> None:
    prefix: list[str] = []
    if (
        shutil.which("unshare")
        and subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode == 0
    ):
        prefix = ["unshare", "-n"]  # a network namespace with no interfaces but loopback
    env = {k: "" for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
    result = run_python(_OFFLINE, env={**env, "HF_HUB_OFFLINE": "0"}, prefix=prefix)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["wordllama/l2_supercat_256", "256", "256", "True"]


def test_two_processes_placing_one_folder_at_once_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As root, several processes starting on a fresh workspace race to create the same symlink;
    the loser must use the winner's link, not fail (seen once in CI: FileExistsError)."""
    from dia_assets.platform.memory import placement

    workspace = tmp_path / "ws"
    workspace.mkdir(mode=0o700)
    home = tmp_path / "home"
    monkeypatch.setattr(placement, "as_root", lambda: True)
    monkeypatch.setattr(placement, "pgdata_home", lambda: home)
    requested = workspace / "pgdata"
    real_symlink = Path.symlink_to

    def racing_symlink(self: Path, target: Path, target_is_directory: bool = False) -> None:
        real_symlink(self, target, target_is_directory)  # the other process wins the race
        raise FileExistsError(17, "File exists", str(target), None, str(self))

    monkeypatch.setattr(Path, "symlink_to", racing_symlink)
    target = placement.place(requested)
    assert requested.is_symlink() and requested.resolve() == target.resolve()
    assert target.parent == home
    # a link made meanwhile to another folder is an error, not silently used
    requested.unlink()

    def foreign_symlink(self: Path, target: Path, target_is_directory: bool = False) -> None:
        real_symlink(self, tmp_path, True)
        raise FileExistsError(17, "File exists", str(target), None, str(self))

    monkeypatch.setattr(Path, "symlink_to", foreign_symlink)
    with pytest.raises(FileExistsError):
        placement.place(requested)


def test_hardening_never_leaves_pg_hba_half_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every process sharing the server narrows pg_hba.conf. Rewritten in place, another
    process (or PostgreSQL reloading) could read it truncated and narrow it to nothing: the
    next start then failed with "pg_hba.conf contains no entries". The rewrite replaces
    the file whole, under pgserver's lock, keeping its mode."""
    from contextlib import contextmanager

    from dia_assets.platform.memory import server

    pgdata = tmp_path / "pgdata"
    pgdata.mkdir(mode=0o700)
    original = "local all all trust\nhost all all 127.0.0.1/32 trust\n"
    hba = pgdata / "pg_hba.conf"
    hba.write_text(original)
    hba.chmod(0o640)
    seen: list[tuple[str, bool]] = []
    held = [False]

    @contextmanager
    def lock() -> Iterator[None]:
        held[0] = True
        yield
        held[0] = False

    real_replace = os.replace

    def replace(src: str | Path, dst: str | Path) -> None:
        seen.append((Path(dst).read_text(), held[0]))  # what a reader sees until the swap
        real_replace(src, dst)

    monkeypatch.setattr(embedded_pg, "lock", lock)
    monkeypatch.setattr(server.os, "replace", replace)
    done = server.harden(pgdata, "postgresql://u@/d?host=/nowhere")
    assert "pg_hba.conf: local socket only" in done
    assert seen == [(original, True)]
    text = hba.read_text()
    assert "local all all trust" in text and "# disabled by DIA" in text
    assert hba.stat().st_mode & 0o777 == 0o640
    assert [p.name for p in pgdata.iterdir()] == ["pg_hba.conf"]  # no temporary left
    assert server.harden(pgdata, "postgresql://u@/d?host=/nowhere") == []  # already narrow
