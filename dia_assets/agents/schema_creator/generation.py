"""The warehouse in place, its validation report and the plan it was built from
(`schema/installed_manifest.json`) form one generation; a crash must never leave them apart.

Order of writes when a build is installed: the build is validated beside the target, then its
report and plan go to `state/pending_install.json` (with the built file's identity), then the
file is renamed over the target, then report and plan are written where readers find them, then
the pending record is removed. Whatever the crash point, the next writer's start (`recover`)
can classify it: a pending record whose identity is the file in place is finished (written);
one whose file was never renamed is rolled back (dropped), as is a killed build's unfinished
file. The attempt it interrupted is closed with what was done, so the state says which.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dia_assets.agents.schema_creator.attempt import alive, attempt_path, interrupted, read_attempt
from dia_assets.agents.schema_creator.incremental import record_installed
from dia_assets.agents.schema_creator.report_files import mark_stale, read_report, write_report
from dia_assets.agents.schema_creator.swap import clean_leftovers
from dia_assets.contracts.attempt import BuildAttempt
from dia_assets.contracts.generation import PendingInstall
from dia_assets.platform.warehouse.base import target_dialect
from dia_assets.platform.warehouse.fingerprint import file_identity
from dia_assets.platform.workspace import Workspace

COMMITTED_PG = ("validate", "report", "report written")  # a PostgreSQL load's transaction ended before these


def pending_path(workspace: str | Path) -> Path:
    return Workspace(workspace).pending_install


def read_pending(workspace: str | Path) -> PendingInstall | None:
    path = pending_path(workspace)
    try:
        return PendingInstall.read(path) if path.exists() else None
    except (ValueError, OSError):
        return None  # half-written: the rename it announced never started


def last_attempt(workspace: str | Path) -> BuildAttempt | None:
    """attempt.json, unless the report already records that same attempt as ended (the process
    died after its install was complete, before its own last line)."""
    record = read_attempt(workspace)
    if record is not None and record.outcome == "running" and not pending_path(workspace).exists():
        report = read_report(workspace)
        done = report.last_attempt if report is not None else None
        if done is not None and done.attempt_id == record.attempt_id and done.outcome != "running":
            return done
    return record


def prepare(workspace: str | Path, pending: PendingInstall) -> None:
    """Before the rename: what the next start writes should the process die after it."""
    pending.write(pending_path(workspace))


def installed_by(pending: PendingInstall) -> bool:
    """Whether the pending build is the file in place (the rename happened)."""
    target = Path(pending.warehouse)
    return target.exists() and file_identity(target) == pending.warehouse_identity


def commit(workspace: str | Path, pending: PendingInstall, attempt: BuildAttempt | None,
           hook: Callable[[str], None] | None = None) -> None:
    """After the rename: the report and plan of the build in place, then the pending record goes."""
    report = pending.report
    if attempt is not None:
        report.last_attempt = attempt
    write_report(report, workspace)
    if hook:
        hook("report written")
    record_installed(pending.manifest, workspace)
    pending_path(workspace).unlink(missing_ok=True)


def recover(workspace: str | Path, warehouse: str) -> list[str]:
    """Finish or roll back what an interrupted build left (under the writer lock, before any
    write); returns what was done, one line each."""
    ws = Path(workspace)
    last = last_attempt(ws)
    killed = last is not None and last.outcome == "running" and alive(last) is False
    removed = [] if not target_dialect(warehouse).file_based else [p.name for p in clean_leftovers(Path(warehouse))
                                                  if "-building-" in p.name and not p.name.endswith(".wal")]
    pending = read_pending(ws)
    action, finished = None, False
    if pending is not None:
        if installed_by(pending):
            action, finished = ("finished: its validated build was already in place; its report and installed "
                                "manifest are now written"), True
        else:
            pending_path(ws).unlink(missing_ok=True)
            action = "rolled back: its validated build was never installed; the warehouse in place is the earlier one"
    elif removed:
        action = (f"rolled back: removed its unfinished build ({', '.join(removed)}); "
                  "the warehouse in place is the earlier one")
    # the attempt this state belongs to: killed, or failed after announcing its install
    owner = last if last is not None and (killed or (
        pending is not None and last.outcome == "failed" and last.attempt_id == pending.attempt_id)) else None
    if owner is None:
        if finished:
            assert pending is not None
            commit(ws, pending, None)
        return [action] if action else []
    if action is None and target_dialect(warehouse).loads_from_duckdb and owner.step in COMMITTED_PG:
        action = "its load was committed to PostgreSQL but not validated: the next build loads and validates it again"
    note = f"{interrupted(owner)}; {action or 'nothing to finish or roll back: it had not changed the warehouse'}"
    owner.recovered.append(note)
    if finished:
        assert pending is not None
        owner.outcome, owner.error = "accepted" if pending.report.accepted else "not_accepted", None
        commit(ws, pending, owner)
    else:
        if killed:
            owner.outcome, owner.error = "failed", f"killed (or timed out) in step {owner.step}"
        mark_stale(ws, note, owner)
    owner.write(attempt_path(ws))
    return [note]
