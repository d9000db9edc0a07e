"""The embedded PostgreSQL (pgserver) behind the default memory store.

pgserver starts PostgreSQL 16 with pgvector on a data folder, shares one server between
processes (a pid list in the data folder) and stops it when the last process exits. This
module adds what a long-lived, multi-process user needs on top:

- pids of killed processes are pruned from pgserver's list, so the server still stops;
- a `postmaster.pid` or socket lock whose pid now belongs to another program (pid reuse
  after a crash, common in containers) is removed, so PostgreSQL can start;
- a server that stopped or crashed under a running process is started again on next use.

Single-user development default: as root, pgserver runs PostgreSQL as a `pgserver` system
user, widens traverse permissions on the data folder's parents and trusts local sockets.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import psutil

_log = logging.getLogger(__name__)


def _pgserver() -> Any:
    """Import pgserver quietly (platformdirs warns when XDG_RUNTIME_DIR is unset)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver

    return pgserver


def _is_postgres(pid: int) -> bool:
    try:
        return psutil.Process(pid).name() in ("postgres", "postmaster")
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return False


def _first_pid(path: Path) -> int | None:
    try:
        first = path.read_text().splitlines()[0].strip()
        return int(first)
    except (OSError, ValueError, IndexError):
        return None


def _stale(path: Path, min_lines: int) -> bool:
    """A lock file is stale when its pid is alive but not a postgres (pid reuse), or when its
    pid is dead and the file is incomplete (a crash during start-up). A complete file with a
    dead pid is left to PostgreSQL, whose shared-memory check guards against orphans."""
    pid = _first_pid(path)
    if pid is None:
        return True
    if psutil.pid_exists(pid):
        return not _is_postgres(pid)
    return len(path.read_text(errors="replace").splitlines()) < min_lines


def remove_stale_files(pgdata: Path) -> list[str]:
    """Delete stale lock files and prune dead pids from pgserver's handle list.

    Call only while holding pgserver's inter-process lock.
    """
    removed: list[str] = []
    pidfile = pgdata / "postmaster.pid"
    if pidfile.exists() and _stale(pidfile, min_lines=8):
        pidfile.unlink(missing_ok=True)
        removed.append(str(pidfile))
    for lock in pgdata.glob(".s.PGSQL.*.lock"):
        if _stale(lock, min_lines=1):
            lock.unlink(missing_ok=True)
            lock.with_suffix("").unlink(missing_ok=True)
            removed.append(str(lock))
    handles = pgdata / ".handle_pids.json"
    if handles.exists():
        try:
            pids = [int(p) for p in json.loads(handles.read_text() or "[]")]
        except (ValueError, TypeError):
            pids = []
        alive = [p for p in pids if psutil.pid_exists(p)]
        if alive != pids:
            handles.write_text(json.dumps(alive))
            removed.append(f"{handles} pids {sorted(set(pids) - set(alive))}")
    if removed:
        _log.warning("removed stale embedded-PostgreSQL state: %s", removed)
    return removed


class EmbeddedServer:
    """A handle on the pgserver instance for one data folder, restarted when found down."""

    def __init__(self, pgdata: Path | str) -> None:
        self.pgdata = Path(pgdata).expanduser().resolve()
        self._server: Any = None
        self._mutex = threading.Lock()

    def _lock(self) -> Any:
        return _pgserver().PostgresServer._lock

    def uri(self) -> str:
        """Connection URI, starting (or restarting) the server if it is not running."""
        with self._mutex:
            pg = _pgserver()
            self.pgdata.parent.mkdir(parents=True, exist_ok=True)
            if self._server is None:
                if self.pgdata.exists():
                    with self._lock():
                        remove_stale_files(self.pgdata)
                self._server = self._start_with_retry(
                    lambda: pg.get_server(self.pgdata, cleanup_mode="stop")
                )
                atexit_prune(self.pgdata)
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
            with _pgserver().PostgresServer._lock:
                remove_stale_files(pgdata)
        except Exception:  # exit path: never raise
            pass

    atexit.register(_prune)
