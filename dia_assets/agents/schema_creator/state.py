"""What the workspace's state is, read-only: the warehouse in place and the last build attempt,
told apart. `dia status`, the warehouse checks and the `answered` check read it here, so a
build that crashed, was killed or was refused never leaves them passing on the old warehouse.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from dia_assets.agents.locations import default_warehouse
from dia_assets.agents.schema_creator.attempt import alive, interrupted
from dia_assets.agents.schema_creator.generation import installed_by, last_attempt, read_pending
from dia_assets.agents.schema_creator.report_files import (
    installed_words,
    read_report,
    report_describes,
)
from dia_assets.contracts.attempt import BuildAttempt
from dia_assets.contracts.report import ValidationReport
from dia_assets.platform.warehouse.base import REGISTRY, target_dialect
from dia_assets.platform.workspace import Workspace

Verdict = Literal["accepted", "not_accepted", "stale", "building", "unvalidated", "no_build"]


@dataclass
class WorkspaceState:
    verdict: Verdict
    headline: str  # one line
    installed: str  # the warehouse in place, in words
    report: ValidationReport | None
    attempt: BuildAttempt | None

    @property
    def ok(self) -> bool:
        """Whether the warehouse in place may be trusted: accepted, and no build failed since."""
        if self.verdict == "building":
            return self.report is not None and self.report.accepted and not self.report.stale_reason
        return self.verdict == "accepted"


def stale_reason(workspace: str | Path) -> str | None:
    """Why nothing may pass on the warehouse in place, or None: the last attempt failed or was
    killed, or the last finished one was refused (the report's STALE mark)."""
    why = interrupted(last_attempt(workspace))
    if why:
        return why
    report = read_report(workspace)
    return report.stale_reason if report is not None else None


def read_state(workspace: str | Path, warehouse: str | None = None) -> WorkspaceState:
    ws = Path(workspace)
    report, attempt = read_report(ws), last_attempt(ws)
    built = REGISTRY.get(report.dialect) if report is not None else None
    # a report names its warehouse unless the target held credentials (then it is redacted)
    target = warehouse or (report.warehouse if built is not None and not built.redacted_target
                           else default_warehouse(ws))
    installed = installed_words(report)
    why = interrupted(attempt)
    if why:
        return WorkspaceState("stale", f"STALE: {why}{_next_start(ws, attempt)}; warehouse in place: {installed}",
                              installed, report, attempt)
    if attempt is not None and attempt.outcome == "running" and alive(attempt) is not False:
        since = f"`{attempt.command}` (pid {attempt.pid}) since {attempt.started_at}, step {attempt.step}"
        return WorkspaceState("building", f"building: {since}; warehouse in place: {installed}",
                              installed, report, attempt)
    if report is None:
        return WorkspaceState("no_build", f"no build yet: no validation report at {Workspace(ws).report}",
                              installed, report, attempt)
    if report.stale_reason:
        return WorkspaceState("stale", f"STALE: {report.stale_reason}", installed, report, attempt)
    if (built is not None and built.file_based and target_dialect(target).file_based
            and not report_describes(report, target)):
        return WorkspaceState("unvalidated", f"unvalidated: the warehouse at {target} is not the file the report "
                              "validated (changed since); run `dia build` or materialize validation_report",
                              installed, report, attempt)
    if report.accepted:
        return WorkspaceState("accepted", f"accepted: the warehouse in place was validated {report.generated_at}",
                              installed, report, attempt)
    return WorkspaceState("not_accepted", f"not accepted: the warehouse in place failed validation "
                          f"({report.generated_at}); see validation/report.md", installed, report, attempt)


def _next_start(workspace: Path, attempt: BuildAttempt | None) -> str:
    """What the next writer will do about the interrupted attempt."""
    if attempt is None:
        return ""
    pending = read_pending(workspace)
    if pending is not None and installed_by(pending):
        return "; its validated build is in place and the next start writes its report"
    if pending is not None:
        return "; the next start rolls back its never-installed build"
    return "; the next start rolls back what it left" if attempt.outcome == "running" else ""
