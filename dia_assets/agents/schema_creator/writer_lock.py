"""One writer per workspace: an exclusive `flock` on `state/writer.lock`.

The operating system releases the lock when its process dies (kill -9 included), so a killed
build never leaves the workspace locked. The lock file holds who has it (pid, command, since)
for the message a second writer gets. Re-entrant within one thread: `dia build` holds it for
the whole run while the load inside takes it again; Dagster steps of one in-process run take
it one after the other.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from dia_assets.platform.workspace import Workspace

POLL_S = 0.2

_held: dict[tuple[str, int], list[int]] = {}  # (lock path, thread) -> [fd, depth]
_guard = threading.Lock()


class WorkspaceBusy(RuntimeError):
    """Another process is writing this workspace."""


def lock_path(workspace: str | Path) -> Path:
    return Workspace(workspace).writer_lock


def holder(workspace: str | Path) -> dict | None:
    """Who holds the lock now (None when it is free): pid, command, since."""
    path = lock_path(workspace)
    if not path.exists():
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read(fd) or {"pid": None, "command": "unknown", "since": "unknown"}
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def describe(info: dict | None) -> str:
    if not info:
        return "another process"
    return f"pid {info.get('pid')} ({info.get('command')}) since {info.get('since')}"


@contextmanager
def writer_lock(workspace: str | Path, command: str, wait_s: float = 0.0,
                say: Callable[[str], None] | None = None) -> Iterator[None]:
    """Hold the workspace's writer lock. Busy: wait up to `wait_s` (saying so once), then raise
    `WorkspaceBusy` with a one-line message naming the holder."""
    path = lock_path(workspace).resolve()
    key = (str(path), threading.get_ident())
    with _guard:
        mine = _held.get(key)
        if mine is not None:
            mine[1] += 1
    if mine is not None:
        try:
            yield
        finally:
            with _guard:
                mine[1] -= 1
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        _acquire(fd, Path(workspace), wait_s, say)
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps({"pid": os.getpid(), "command": command,
                                  "since": datetime.now(UTC).isoformat(timespec="seconds")}).encode(), 0)
        with _guard:
            _held[key] = [fd, 1]
        try:
            yield
        finally:
            with _guard:
                _held.pop(key, None)
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _acquire(fd: int, workspace: Path, wait_s: float, say: Callable[[str], None] | None) -> None:
    deadline = time.monotonic() + wait_s
    told = False
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            who = describe(_read(fd))
            if time.monotonic() >= deadline:
                waited = f" after waiting {wait_s:g} s" if wait_s else ""
                raise WorkspaceBusy(f"workspace {workspace} is being written by {who}{waited}; "
                                    "try again when it ends") from None
            if say and not told:
                say(f"waiting for workspace {workspace}: it is being written by {who}")
                told = True
            time.sleep(POLL_S)


def _read(fd: int) -> dict | None:
    try:
        return json.loads(os.pread(fd, 4096, 0).decode() or "null")
    except (OSError, ValueError):
        return None
