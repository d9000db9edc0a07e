"""`writing`: the one way to change a workspace (`dia build`, `dia demo`, the Dagster steps that
interpret, plan, load and report).

Inside it: one writer at a time (writer_lock), what an interrupted build left is finished or
rolled back first (generation.recover), and the attempt is on disk from its first step
(attempt.py). An exception anywhere marks the attempt failed and the report STALE with a
one-line reason before it propagates.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from dia_assets.agents.locations import default_warehouse
from dia_assets.agents.schema_creator.attempt import Attempt, interrupted
from dia_assets.agents.schema_creator.failures import one_line
from dia_assets.agents.schema_creator.generation import recover
from dia_assets.agents.schema_creator.report_files import mark_stale
from dia_assets.agents.schema_creator.writer_lock import writer_lock
from dia_assets.platform.settings import get_settings

WAIT_ENV = "DIA_WRITER_WAIT_S"


def scheduled_wait_s() -> float:
    """How long a Dagster step waits for another writer (DIA_WRITER_WAIT_S, default 15 minutes):
    a run the sensor started must not fail because `dia build` was running."""
    return get_settings().writer_wait_s


@contextmanager
def writing(workspace: str | Path, command: str, step: str, warehouse: str | None = None, *,
            attempt_id: str | None = None, record: bool = True, final: bool = True, wait_s: float = 0.0,
            say: Callable[[str], None] | None = None, next_pid: int | None = None) -> Iterator[Attempt | None]:
    """Hold the workspace for a write. `record`: an attempt (None for writes that are not
    builds, e.g. the report of the warehouse in place). `final`: the attempt ends with this
    block (else the run goes on in `next_pid`, default this process, and a later step with the
    same `attempt_id` continues it)."""
    ws = Path(workspace)
    with writer_lock(ws, command, wait_s, say):
        notes = recover(ws, warehouse or default_warehouse(ws))
        if not record:
            yield None
            return
        attempt = Attempt.begin(ws, command, step, attempt_id, notes)
        try:
            yield attempt
        except BaseException as exc:
            failed(ws, attempt, exc)
            raise
        if attempt.running:
            if final:
                attempt.finish("done")
            else:
                attempt.hand_over(next_pid or os.getpid())


def failed(workspace: Path, attempt: Attempt, exc: BaseException) -> str:
    """Record why the attempt failed and mark the report STALE; returns the one-line reason."""
    if not attempt.running:
        return attempt.record.error or one_line(exc)
    reason = one_line(exc)
    try:
        reason = attempt.fail(exc)
        mark_stale(workspace, interrupted(attempt.record) or reason, attempt.record)
    except OSError:
        pass  # disk full: the record stays `running` and reads as killed once this process ends
    return reason
