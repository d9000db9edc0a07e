"""The build attempt record (`state/attempt.json`): written when a build starts, completed
when it ends, so a build that never ended (killed, timed out) is still known afterwards."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from dia_assets.contracts.artifact import Artifact

ATTEMPT_VERSION = 1

# running: not ended (alive, or killed if its process is gone); accepted / not_accepted: it
# finished validation; failed: it raised before validation finished; done: a step that does
# not build (interpret or plan only) ended.
Outcome = Literal["running", "accepted", "not_accepted", "failed", "done"]


class BuildAttempt(Artifact):
    version: int = ATTEMPT_VERSION
    attempt_id: str = Field(description="A Dagster run id, or a fresh id per `dia build`.")
    command: str = Field(description="Who writes: `dia build DATA`, `dagster run <id> (build_job)`, ...")
    pid: int | None = Field(None, description="The process doing the attempt (a Dagster run's worker process).")
    pid_started: str | None = Field(None, description="That process's start time (/proc), so a reused pid "
                                    "is not taken for the writer.")
    host: str = ""
    started_at: str
    updated_at: str
    step: str = Field("start", description="The step in progress (or the last one reached).")
    outcome: Outcome = "running"
    finished_at: str | None = None
    error: str | None = Field(None, description="One line: why the attempt failed.")
    recovered: list[str] = Field(default_factory=list, description="What this attempt's start finished or rolled "
                                 "back of an earlier interrupted one.")
