"""The whole Schema Creator run: plan -> artifacts -> load -> validate -> report."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from dia_assets.agents.locations import default_warehouse, is_postgres
from dia_assets.agents.schema_creator import sqlgen
from dia_assets.agents.schema_creator.er import er_diagram
from dia_assets.agents.schema_creator.lineage import manifest_lineage
from dia_assets.agents.schema_creator.load import LoadResult, StepHook, load_duckdb
from dia_assets.agents.schema_creator.overrides import (
    file_decisions,
    load_overrides,
    write_template,
)
from dia_assets.agents.schema_creator.plan import plan_manifest
from dia_assets.agents.schema_creator.swap import content_hash, file_identity
from dia_assets.agents.schema_creator.target import Target
from dia_assets.agents.schema_creator.validate import render_markdown, validate
from dia_assets.contracts.artifact import write_atomic
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.contracts.manifest import Manifest
from dia_assets.contracts.report import ReloadRecord, ValidationReport

OVERRIDES = ("review", "interpretation_overrides.yaml")


def overrides_path(workspace: str | Path) -> Path:
    return Path(workspace).joinpath(*OVERRIDES)


def expert_files(workspace: str | Path, seed: str | Path | None = None) -> dict[str, str]:
    """The expert's `files` decisions for the interpreter: from the workspace's overrides, or
    from the file that will seed them."""
    path = overrides_path(workspace)
    return file_decisions(path if path.exists() or seed is None else seed)


def prepare_overrides(interp: Interpretation, workspace: str | Path, seed: str | Path | None = None) -> Path:
    """Create the overrides file once (from `seed` or the template); never overwrite it."""
    path = overrides_path(workspace)
    if not path.exists():
        if seed is not None and Path(seed).exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(seed, path)
        else:
            write_template(interp, path)
    return path


def write_plan(interp: Interpretation, workspace: str | Path, dialect: str = "duckdb",
               seed: str | Path | None = None) -> tuple[Manifest, dict[str, Path]]:
    """schema/manifest.json, ddl.sql, load.sql, er.mmd, lineage.json from interpretation + overrides."""
    ws = Path(workspace)
    path = prepare_overrides(interp, ws, seed)
    before = previous_manifest(ws)
    manifest = plan_manifest(interp, load_overrides(path), dialect=dialect, previous=before)
    known = _unchanged_lineage(before, manifest, ws / "schema" / "lineage.json")
    schema = ws / "schema"
    schema.mkdir(parents=True, exist_ok=True)
    paths = {
        "manifest": manifest.write(schema / "manifest.json"),
        "ddl": schema / "ddl.sql",
        "load": schema / "load.sql",
        "er": schema / "er.mmd",
        "lineage": schema / "lineage.json",
        "overrides": path,
    }
    if dialect == "postgres":
        from dia_assets.agents.schema_creator.postgres import ddl_script as pg_ddl

        paths["ddl"].write_text(pg_ddl(manifest), encoding="utf-8")
    else:
        paths["ddl"].write_text(sqlgen.ddl_script(manifest), encoding="utf-8")
    paths["load"].write_text(sqlgen.load_script(manifest), encoding="utf-8")
    paths["er"].write_text(er_diagram(manifest), encoding="utf-8")
    paths["lineage"].write_text(json.dumps(manifest_lineage(manifest, known), indent=2), encoding="utf-8")
    return manifest, paths


def _unchanged_lineage(before: Manifest | None, manifest: Manifest, path: Path) -> dict:
    """The previous lineage.json entries of tables whose plan did not change."""
    if before is None or not path.exists():
        return {}
    try:
        previous = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, OSError):
        return {}
    old = {t.name: t for t in before.tables}
    return {t.name: previous[t.name] for t in manifest.tables
            if t.name in previous and t.name in old and old[t.name].model_dump() == t.model_dump()}


def previous_manifest(workspace: str | Path) -> Manifest | None:
    """The manifest the last plan wrote: its keys carry over (plan._kept_key)."""
    path = Path(workspace) / "schema" / "manifest.json"
    try:
        return Manifest.read(path) if path.exists() else None
    except (ValueError, OSError):
        return None


def load_warehouse(manifest: Manifest, warehouse: str, hook: StepHook | None = None) -> LoadResult:
    if is_postgres(warehouse):
        from dia_assets.agents.schema_creator.postgres import load_postgres

        return load_postgres(manifest, manifest.data_dir, warehouse, hook)
    return load_duckdb(manifest, manifest.data_dir, warehouse, hook)


def load_and_validate(
    manifest: Manifest, warehouse: str, workspace: str | Path, interp: Interpretation | None = None,
    hook: StepHook | None = None, replace_anyway: bool = False, incremental: bool = False,
) -> tuple[LoadResult, ValidationReport]:
    """Load, validating the new DuckDB file *before* it replaces the old one: a build that is
    not accepted keeps the previous warehouse unless `replace_anyway`. The report says which
    file it describes (path, content hash, installed or not). With `incremental`, only the
    tables whose file or plan changed are loaded again (incremental.py), when the warehouse
    in place allows it; otherwise a full build runs and the report says why."""
    from dia_assets.agents.schema_creator import incremental as inc

    before = inc.installed_manifest(workspace)
    record = ReloadRecord(mode="full", reloaded=[t.name for t in manifest.tables],
                          retired=inc.retired_tables(before, manifest))
    quick = None
    if incremental and not is_postgres(warehouse):
        path = Path(warehouse).resolve()
        old_report = _read_report(workspace)
        record.fallback = inc.unusable_reason(before, manifest, old_report, path)
        if record.fallback is None:
            assert before is not None and old_report is not None
            plan = inc.plan_reload(before, manifest)
            quick = inc.reload_duckdb(before, manifest, plan, path, old_report, interp, hook, replace_anyway)
    elif incremental:
        record.fallback = "incremental reloads are for DuckDB warehouses; PostgreSQL is loaded in full"
    if quick is not None:
        loaded, report = quick
    elif is_postgres(warehouse):
        loaded = load_warehouse(manifest, warehouse, hook)
        with Target(warehouse) as target:
            report = validate(target, manifest, interp)
    else:
        reports: list[ValidationReport] = []

        def accept(built: Path) -> bool:
            with Target(built) as target:
                reports.append(validate(target, manifest, interp))
            return reports[-1].accepted

        loaded = load_duckdb(manifest, manifest.data_dir, warehouse, hook, accept, replace_anyway)
        report = reports[-1]
        report.warehouse = loaded.warehouse
    if report.reload is None:
        report.reload = record
    report.installed, report.rejected_build = loaded.installed, loaded.rejected_build
    report.warehouse_hash = loaded.content_hash
    if report.installed and not is_postgres(warehouse):
        report.warehouse_identity = file_identity(Path(loaded.warehouse))
    report.stale_overrides = list(manifest.stale_overrides)
    if not report.installed:
        report.stale_reason = (f"this build was not accepted and was not installed ({report.rejected_build}); "
                               "the warehouse in place is an earlier build that does not match the current data")
    write_report(report, workspace)
    if report.installed:
        inc.record_installed(manifest, workspace)
    return loaded, report


def _read_report(workspace: str | Path) -> ValidationReport | None:
    path = Path(workspace) / "validation" / "report.json"
    try:
        return ValidationReport.read(path) if path.exists() else None
    except Exception:  # noqa: BLE001 - an unreadable report only means a full build
        return None


def validate_warehouse(manifest: Manifest, warehouse: str, workspace: str | Path,
                       interp: Interpretation | None = None) -> ValidationReport:
    """Validate the warehouse in place (the Dagster checks and `validation_report`)."""
    with Target(warehouse) as target:
        report = validate(target, manifest, interp)
    if not is_postgres(warehouse):
        report.warehouse_hash = content_hash(Path(warehouse))
        report.warehouse_identity = file_identity(Path(warehouse))
    report.stale_overrides = list(manifest.stale_overrides)
    write_report(report, workspace)
    return report


def shared_report(manifest: Manifest, warehouse: str, workspace: str | Path,
                  interp: Interpretation | None = None, write: bool = True) -> ValidationReport:
    """The validation of the warehouse in place, computed once per build: the report the build
    wrote when it describes this very file (same content hash), else validated afresh (and
    written when `write`). The `warehouse` asset's checks and `validation_report` share it."""
    path = Path(workspace) / "validation" / "report.json"
    if not is_postgres(warehouse) and path.exists():
        try:
            report = ValidationReport.read(path)
        except Exception:  # noqa: BLE001 - an unreadable report is simply made again
            report = None
        if report is not None and report_describes(report, warehouse):
            return report
    if write:
        return validate_warehouse(manifest, warehouse, workspace, interp)
    with Target(warehouse) as target:
        return validate(target, manifest, interp)


def write_report(report: ValidationReport, workspace: str | Path) -> None:
    out = Path(workspace) / "validation"
    report.write(out / "report.json")
    write_atomic(out / "report.md", report_markdown(report))


def report_markdown(report: ValidationReport) -> str:
    """The validation report, led by a STALE banner when a later build failed, and followed by
    the overrides that name what the data no longer has."""
    md = render_markdown(report)
    if report.stale_reason:
        md = f"> **STALE / FAILED: {report.stale_reason}**\n\n" + md
    if report.stale_overrides:
        md += "\n## Stale overrides (ignored)\n\n" + "".join(
            f"- line {s.line or '?'} `{s.where}`: {s.reason}\n" for s in report.stale_overrides)
    return md


def mark_stale(workspace: str | Path, reason: str) -> ValidationReport | None:
    """A build failed before it could validate: the report on disk describes an earlier build,
    so it stops saying `accepted` (the warehouse in place no longer matches the data)."""
    path = Path(workspace) / "validation" / "report.json"
    if not path.exists():
        return None
    report = ValidationReport.read(path)
    report.accepted = False
    report.stale_reason = reason
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


@dataclass
class BuildResult:
    manifest: Manifest
    load: LoadResult
    report: ValidationReport
    paths: dict[str, Path]


def run(data_dir: str | Path, workspace: str | Path, warehouse: str | None = None,
        interpretation: Interpretation | None = None, overrides_seed: str | Path | None = None,
        hook: StepHook | None = None, replace_anyway: bool = False, incremental: bool = False) -> BuildResult:
    """With `incremental`, unchanged files keep their profile (interpretation) and their tables
    (load); see incremental.py."""
    ws = Path(workspace).resolve()
    ws.mkdir(parents=True, exist_ok=True)
    interp = interpretation
    if interp is None:
        from dia_assets.agents.interpreter import interpret

        interp = interpret(data_dir, previous=previous_interpretation(ws) if incremental else None,
                           decisions=expert_files(ws, overrides_seed))
        (ws / "interpretation.json").write_text(interp.to_json(), encoding="utf-8")
    target = warehouse or default_warehouse(ws)
    dialect = "postgres" if is_postgres(target) else "duckdb"
    manifest, paths = write_plan(interp, ws, dialect, overrides_seed)
    loaded, report = load_and_validate(manifest, target, ws, interp, hook, replace_anyway, incremental)
    paths["report"] = ws / "validation" / "report.json"
    paths["report_md"] = ws / "validation" / "report.md"
    return BuildResult(manifest=manifest, load=loaded, report=report, paths=paths)


def build(data_dir: str | Path, workspace: str | Path, warehouse: str | None = None,
          overrides_seed: str | Path | None = None, replace_anyway: bool = False,
          incremental: bool = False) -> ValidationReport:
    """Interpret, plan, load and validate; the entry point for `dia build`."""
    return run(data_dir, workspace, warehouse, overrides_seed=overrides_seed, replace_anyway=replace_anyway,
               incremental=incremental).report


def previous_interpretation(workspace: str | Path) -> Interpretation | None:
    """The last `interpretation.json`: its unchanged files keep their profiles."""
    path = Path(workspace) / "interpretation.json"
    try:
        return Interpretation.model_validate_json(path.read_text(encoding="utf-8")) if path.exists() else None
    except (ValueError, OSError):
        return None


def summary(report: ValidationReport) -> str:
    lines = [f"accepted: {str(report.accepted).lower()}  ({report.warehouse})"]
    if report.stale_reason:
        lines.append(f"  STALE: {report.stale_reason}")
    for s in report.stale_overrides:
        lines.append(f"  stale override, line {s.line or '?'} {s.where}: {s.reason}")
    for question in report.open_questions:
        lines.append(f"  QUESTION: {question}")
    if not report.installed:
        lines.append(f"  NOT INSTALLED: the previous warehouse is still in place; this build is kept at "
                     f"{report.rejected_build} (use --replace-anyway to install it regardless)")
    if report.reload is not None and report.reload.mode == "incremental":
        lines.append(f"  incremental: reloaded {', '.join(report.reload.reloaded) or 'nothing'}; "
                     f"kept {len(report.reload.kept)} table(s) untouched")
    elif report.reload is not None and report.reload.fallback:
        lines.append(f"  full build ({report.reload.fallback})")
    for r in report.reload.retired if report.reload else []:
        lines.append(f"  RETIRED {r.table}: {r.reason}")
    for name, axis in report.axes.items():
        lines.append(f"  {'PASS' if axis.passed else 'FAIL'} {name}: {axis.summary}")
    nulled = {r.table: r.values_nulled for r in report.load_integrity}
    for r in report.row_counts:
        lines.append(f"  {r.table}: {r.source_rows} source = {r.refined} refined + {r.rejected} rejected"
                     f" + {r.duplicates_removed} duplicates" + (f" + {r.unparsed_lines} bad lines" if r.unparsed_lines else "")
                     + (f" ({nulled[r.table]} rows kept with a bad value NULLed, raw value in rejects)"
                        if nulled.get(r.table) else ""))
        lines += [f"    {f.message}" for f in r.files]
    return "\n".join(lines)
