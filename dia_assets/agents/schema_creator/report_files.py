"""`validation/report.json` and `report.md`: read, written, marked STALE, and matched to the
warehouse file they describe. Every writer of the report goes through here."""

from __future__ import annotations

from pathlib import Path

from dia_assets.agents.schema_creator.swap import content_hash
from dia_assets.agents.schema_creator.validate import render_markdown
from dia_assets.contracts.artifact import write_atomic
from dia_assets.contracts.attempt import BuildAttempt
from dia_assets.contracts.report import InstalledBuild, ValidationReport
from dia_assets.platform.warehouse.fingerprint import file_identity
from dia_assets.platform.workspace import Workspace


def report_path(workspace: str | Path) -> Path:
    return Workspace(workspace).report


def read_report(workspace: str | Path) -> ValidationReport | None:
    """The report on disk; None when there is none or it cannot be read."""
    path = report_path(workspace)
    try:
        return ValidationReport.read(path) if path.exists() else None
    except Exception:  # noqa: BLE001 - an unreadable report is no report
        return None


def write_report(report: ValidationReport, workspace: str | Path) -> None:
    ws = Workspace(workspace)
    report.write(ws.report)
    write_atomic(ws.report_md, report_markdown(report))


def installed_build(report: ValidationReport) -> InstalledBuild:
    """The report's own build, as the warehouse in place."""
    return InstalledBuild(warehouse=report.warehouse, validated_at=report.generated_at, accepted=report.accepted,
                          warehouse_hash=report.warehouse_hash, warehouse_identity=report.warehouse_identity,
                          rows={r.table: r.refined for r in report.row_counts})


def installed_words(report: ValidationReport | None) -> str:
    if report is None:
        return "none"
    b = report.installed_build or (installed_build(report) if report.installed else None)
    if b is None:
        return "an earlier build (no report of its own)"
    return f"the build validated {b.validated_at} ({'accepted' if b.accepted else 'not accepted'})"


def report_markdown(report: ValidationReport) -> str:
    """The validation report, led by a STALE banner when a later build failed, the warehouse in
    place and the last attempt, and followed by the overrides that name what the data no longer has."""
    md = render_markdown(report)
    head = []
    if report.stale_reason:
        head.append(f"> **STALE / FAILED: {report.stale_reason}**\n")
    if not report.installed:
        head.append(f"Warehouse in place: {installed_words(report)}, not the build this report describes.\n")
    if report.last_attempt is not None:
        head.append(f"Last build attempt: {attempt_line(report.last_attempt)}\n")
    if head:
        md = "\n".join(head) + "\n" + md
    if report.stale_overrides:
        md += "\n## Stale overrides (ignored)\n\n" + "".join(
            f"- line {s.line or '?'} `{s.where}`: {s.reason}\n" for s in report.stale_overrides)
    return md


def attempt_line(a: BuildAttempt) -> str:
    end = {"running": f"running, step {a.step}", "failed": f"failed in step {a.step}: {a.error}",
           "accepted": "finished, accepted", "not_accepted": "finished, not accepted",
           "done": f"finished step {a.step}"}[a.outcome]
    recovered = f"; on its start: {'; '.join(a.recovered)}" if a.recovered else ""
    return f"`{a.command}` (pid {a.pid}) started {a.started_at}: {end}{recovered}"


def mark_stale(workspace: str | Path, reason: str, attempt: BuildAttempt | None = None) -> ValidationReport | None:
    """A build failed before it could validate: the report on disk describes an earlier build,
    so it stops saying `accepted` (the warehouse in place no longer matches the data). The
    warehouse in place keeps its own verdict in `installed_build`."""
    report = read_report(workspace)
    if report is None:
        return None
    if report.installed_build is None and report.installed:
        report.installed_build = installed_build(report)
    report.accepted = False
    report.stale_reason = reason
    if attempt is not None:
        report.last_attempt = attempt
    write_report(report, workspace)
    return report


def report_describes(report: ValidationReport, warehouse: str | Path) -> bool:
    """Whether a report was made for the DuckDB file now at `warehouse` (a kill between the
    swap and the report write leaves an older report beside a newer file)."""
    path = Path(warehouse)
    if not (report.installed and path.exists()):
        return False
    if report.warehouse_identity:  # cheap: no read of the file (each check asks)
        return report.warehouse_identity == file_identity(path)
    return report.warehouse_hash == content_hash(path)
