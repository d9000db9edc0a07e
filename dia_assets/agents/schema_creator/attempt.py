"""The build attempt record: `state/attempt.json`, written when a build starts and at each
step, completed when it ends. A record still `running` whose process is gone belongs to a
build that was killed (or timed out): the next start and `dia status` read which step it died in.
"""

from __future__ import annotations

import os
import socket
import uuid
from datetime import UTC, datetime
from pathlib import Path

from dia_assets.agents.schema_creator.failures import one_line
from dia_assets.contracts.attempt import BuildAttempt, Outcome
from dia_assets.platform.workspace import Workspace


def attempt_path(workspace: str | Path) -> Path:
    return Workspace(workspace).attempt


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def process_started(pid: int) -> str | None:
    """The start time of a process (clock ticks since boot, from /proc): with the pid it names
    one process, not whichever later process reuses the number."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def zombie(pid: int) -> bool:
    """A process that ended and waits for its parent to read its exit status (state Z)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def started_at(pid: int) -> float | None:
    """When a process started, in epoch seconds (boot time plus its start from /proc)."""
    ticks = process_started(pid)
    try:
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
    except (OSError, StopIteration, ValueError):
        return None
    return None if ticks is None else boot + int(ticks) / os.sysconf("SC_CLK_TCK")


def process_gone(pid: int, seen_at: float) -> bool:
    """Whether the process `pid`, known to be running at `seen_at` (epoch seconds), has ended: no
    such process, a zombie, or a later process that reuses the number."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    if zombie(pid):
        return True
    start = started_at(pid)
    return start is not None and start > seen_at + 1  # +1: the clock-tick rounding of the start time


def alive(record: BuildAttempt) -> bool | None:
    """Whether the attempt's process still runs (None: another host, cannot tell)."""
    if record.pid is None:
        return False
    if record.host and record.host != socket.gethostname():
        return None
    try:
        os.kill(record.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    if zombie(record.pid):  # killed, not yet reaped by its parent: gone all the same
        return False
    started = process_started(record.pid)
    return record.pid_started is None or started is None or started == record.pid_started


def read_attempt(workspace: str | Path) -> BuildAttempt | None:
    path = attempt_path(workspace)
    try:
        return BuildAttempt.read(path) if path.exists() else None
    except (ValueError, OSError):
        return None


def describe(record: BuildAttempt) -> str:
    """`the build started <t> by <command> (pid N)`."""
    return f"the build started {record.started_at} by `{record.command}` (pid {record.pid})"


def interrupted(record: BuildAttempt | None) -> str | None:
    """Why an attempt counts as not finished: killed (its process is gone mid-step) or failed."""
    if record is None:
        return None
    if record.outcome == "failed":
        return f"{describe(record)} failed in step {record.step}: {record.error or 'unknown error'}"
    if record.outcome == "running" and alive(record) is False:
        return f"{describe(record)} was killed (or timed out) in step {record.step}"
    return None


class Attempt:
    """One build attempt; each change is written at once (atomically), so a kill at any point
    leaves the last step reached on disk."""

    def __init__(self, workspace: str | Path, record: BuildAttempt):
        self.workspace = Path(workspace)
        self.record = record

    @classmethod
    def begin(cls, workspace: str | Path, command: str, step: str, attempt_id: str | None = None,
              recovered: list[str] | None = None) -> Attempt:
        """Start an attempt, or continue it when the record is this attempt's (a Dagster run's
        next step: same run id)."""
        pid = os.getpid()
        current = read_attempt(workspace)
        if attempt_id and current is not None and current.attempt_id == attempt_id and current.outcome == "running":
            current.recovered += recovered or []
            record = current.model_copy(update={"pid": pid, "pid_started": process_started(pid)})
        else:
            now = _now()
            record = BuildAttempt(attempt_id=attempt_id or uuid.uuid4().hex[:12], command=command, pid=pid,
                                  pid_started=process_started(pid), host=socket.gethostname(), started_at=now,
                                  updated_at=now, recovered=list(recovered or []))
        attempt = cls(workspace, record)
        attempt.step(step)
        return attempt

    @property
    def running(self) -> bool:
        return self.record.outcome == "running"

    def step(self, name: str) -> None:
        self.record.step = name
        self._write()

    def hand_over(self, pid: int) -> None:
        """A step ended but the run goes on in `pid` (its next step will continue the record)."""
        self.record.pid, self.record.pid_started = pid, process_started(pid)
        self._write()

    def ended(self, outcome: Outcome) -> BuildAttempt:
        """The record as it will read once finished (for the report written just before)."""
        return self.record.model_copy(update={"outcome": outcome, "finished_at": _now()})

    def finish(self, outcome: Outcome, error: str | None = None) -> BuildAttempt:
        self.record.outcome, self.record.error = outcome, error
        self.record.finished_at = _now()
        self._write()
        return self.record

    def fail(self, exc: BaseException) -> str:
        """Record the failure (one line; the traceback goes to state/last_error.txt)."""
        import traceback

        reason = one_line(exc)
        try:
            log = Workspace(self.workspace).last_error
            log.parent.mkdir(parents=True, exist_ok=True)
            log.write_text(f"{self.record.command} in step {self.record.step}\n"
                           + "".join(traceback.format_exception(exc)), encoding="utf-8")
        except OSError:
            pass  # the disk may be full: the record below matters more
        self.finish("failed", reason)
        return reason

    def _write(self) -> None:
        self.record.updated_at = _now()
        self.record.write(attempt_path(self.workspace))
