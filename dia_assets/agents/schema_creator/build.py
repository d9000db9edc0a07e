"""The whole Schema Creator run: plan -> artifacts -> load -> validate -> report, from an
interpretation (dia_assets/pipeline.py interprets first, for `dia build`)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING

from dia_assets.agents.schema_creator import sqlgen
from dia_assets.agents.schema_creator.attempt import Attempt
from dia_assets.agents.schema_creator.er import er_diagram
from dia_assets.agents.schema_creator.generation import commit, last_attempt, prepare
from dia_assets.agents.schema_creator.installers import installer_for
from dia_assets.agents.schema_creator.lineage import manifest_lineage
from dia_assets.agents.schema_creator.load import LoadResult, StepHook, load_duckdb
from dia_assets.agents.schema_creator.overrides import (
    file_decisions,
    load_overrides,
    write_template,
)
from dia_assets.agents.schema_creator.plan import plan_manifest
from dia_assets.agents.schema_creator.report_files import (  # noqa: F401 - the report's API, re-exported
    attempt_line,
    installed_build,
    installed_words,
    mark_stale,
    read_report,
    report_describes,
    report_markdown,
    write_report,
)
from dia_assets.agents.schema_creator.state import stale_reason
from dia_assets.agents.schema_creator.swap import content_hash
from dia_assets.agents.schema_creator.validate import validate
from dia_assets.agents.schema_creator.writer import writing
from dia_assets.contracts.generation import PendingInstall
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.contracts.manifest import Manifest
from dia_assets.contracts.report import InstalledBuild, ReloadRecord, ValidationReport
from dia_assets.platform.tables.target import Target
from dia_assets.platform.warehouse.base import build_dialect, dialect_for, target_dialect
from dia_assets.platform.warehouse.fingerprint import file_identity
from dia_assets.platform.workspace import Workspace

if TYPE_CHECKING:
    from dia_assets.agents.schema_creator.postgres import SchemaCheck


def overrides_path(workspace: str | Path) -> Path:
    return Workspace(workspace).overrides


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
    files = Workspace(ws)
    known = _unchanged_lineage(before, manifest, files.schema_lineage)
    files.schema_dir.mkdir(parents=True, exist_ok=True)
    paths = {
        "manifest": manifest.write(files.manifest),
        "ddl": files.ddl,
        "load": files.load,
        "er": files.er,
        "lineage": files.schema_lineage,
        "overrides": path,
    }
    if dialect_for(dialect).loads_from_duckdb:  # its installer's DDL (installers.py)
        paths["ddl"].write_text(installer_for(dialect_for(dialect)).ddl_script(manifest), encoding="utf-8")
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
    path = Workspace(workspace).manifest
    try:
        return Manifest.read(path) if path.exists() else None
    except (ValueError, OSError):
        return None


def load_warehouse(manifest: Manifest, warehouse: str, hook: StepHook | None = None,
                   check: SchemaCheck | None = None, replace_anyway: bool = False,
                   retire: list[str] | None = None) -> LoadResult:
    """`check` (PostgreSQL, Spark): validates the build schemas before the swap installs them (and
    moves out the `retire` tables, which the previous plan had and this one no longer has)."""
    if build_dialect(warehouse).loads_from_duckdb:
        return installer_for(build_dialect(warehouse)).load(manifest, manifest.data_dir, warehouse, hook, check,
                                                            replace_anyway, retire=retire or ())
    return load_duckdb(manifest, manifest.data_dir, warehouse, hook)


def load_and_validate(
    manifest: Manifest, warehouse: str, workspace: str | Path, interp: Interpretation | None = None,
    hook: StepHook | None = None, replace_anyway: bool = False, incremental: bool = False,
    attempt: Attempt | None = None, only: Collection[str] | None = None,
) -> tuple[LoadResult, ValidationReport]:
    """Load, validating the new DuckDB file *before* it replaces the old one: a build that is
    not accepted keeps the previous warehouse unless `replace_anyway`. The report says which
    file it describes (path, content hash, installed or not). With `incremental`, only the
    tables whose file or plan changed are loaded again (incremental.py), when the warehouse
    in place allows it; otherwise a full build runs and the report says why.

    It runs as a build attempt (writer.py: the workspace's lock, recovery, the attempt record);
    `attempt`: the one a caller already holds. A validated build is installed in the order of
    generation.py, so a kill at any point leaves a state the next start can classify.

    `only` (with `incremental`): a subset build of these tables (incremental.subset_manifest);
    where an incremental reload is not possible a full build runs and `reload.fallback` says why."""
    if attempt is None:
        with writing(workspace, "load_and_validate", "load", warehouse) as own:
            assert own is not None
            return load_and_validate(manifest, warehouse, workspace, interp, hook, replace_anyway, incremental, own,
                                     only)
    from dia_assets.agents.schema_creator import incremental as inc

    steps = tracked(attempt, hook)
    steps("load")
    previous = read_report(workspace)
    before = inc.installed_manifest(workspace)
    record = ReloadRecord(mode="full", reloaded=[t.name for t in manifest.tables],
                          retired=inc.retired_tables(before, manifest))
    pending: list[PendingInstall] = []

    def finish(report: ValidationReport, installed: bool, built: Path | None, digest: str | None,
               rejected_build: str | None = None) -> ValidationReport:
        """The report's bookkeeping: which file, installed or not, and the warehouse in place."""
        if report.reload is None:
            report.reload = record
        report.installed, report.rejected_build, report.warehouse_hash = installed, rejected_build, digest
        report.warehouse_identity = file_identity(built) if installed and built is not None else None
        report.stale_overrides = list(manifest.stale_overrides)
        if installed:
            report.installed_build = installed_build(report)
        else:
            report.installed_build = _installed_before(previous)
            report.stale_reason = (f"this build was not accepted and was not installed ({rejected_build}); "
                                   "the warehouse in place is an earlier build that does not match the current data")
        return report

    def before_install(report: ValidationReport, built: Path, digest: str) -> None:
        report.warehouse = str(Path(warehouse).resolve())
        pending.append(PendingInstall(attempt_id=attempt.record.attempt_id, warehouse=report.warehouse,
                                      warehouse_identity=file_identity(built),
                                      report=finish(report, True, built, digest), manifest=manifest))
        prepare(workspace, pending[-1])
        steps("pending")

    quick = None
    if incremental and build_dialect(warehouse).incremental_reload:
        path = Path(warehouse).resolve()
        record.fallback = (f"the last build was interrupted ({attempt.record.recovered[0]})"
                           if attempt.record.recovered else inc.unusable_reason(before, manifest, previous, path))
        if record.fallback is None:
            assert before is not None and previous is not None
            if only is not None:  # the closures above read `manifest` when called: the subset's plan
                manifest = inc.subset_manifest(before, manifest, set(only))
            plan = inc.plan_reload(before, manifest, None if only is None else set(only))
            quick = inc.reload_duckdb(before, manifest, plan, path, previous, interp, steps, replace_anyway,
                                      before_install)
    elif incremental and build_dialect(warehouse).loads_from_duckdb \
            and installer_for(build_dialect(warehouse)).incremental:  # PostgreSQL: the swap of what changed
        record.fallback = (f"the last build was interrupted ({attempt.record.recovered[0]})"
                           if attempt.record.recovered else inc.unusable_reason_pg(before, manifest, previous, warehouse))
        if record.fallback is None:
            assert before is not None and previous is not None
            if only is not None:
                manifest = inc.subset_manifest(before, manifest, set(only))
            plan = inc.plan_reload(before, manifest, None if only is None else set(only))
            quick = inc.reload_postgres(before, manifest, plan, warehouse, previous, interp, steps, replace_anyway)
    elif incremental:
        record.fallback = f"incremental reloads are not available on {build_dialect(warehouse).title}"
    if quick is not None:
        loaded, report = quick
    elif build_dialect(warehouse).loads_from_duckdb:  # validated in its build schemas, then swapped in
        checked: list[ValidationReport] = []

        def accept_schemas(schemas: dict[str, str]) -> bool:
            steps("validate")
            with Target(warehouse, schemas=schemas) as target:
                checked.append(validate(target, manifest, interp))
            return checked[-1].accepted

        loaded = load_warehouse(manifest, warehouse, steps, accept_schemas, replace_anyway,
                                [r.table for r in record.retired])
        report = checked[-1]
    else:
        reports: list[ValidationReport] = []

        def accept(built: Path) -> bool:
            steps("validate")
            with Target(built) as target:
                reports.append(validate(target, manifest, interp))
            return reports[-1].accepted

        loaded = load_duckdb(manifest, manifest.data_dir, warehouse, steps, accept, replace_anyway,
                             lambda _, built, digest: before_install(reports[-1], built, digest))
        report = reports[-1]
        report.warehouse = loaded.warehouse
    steps("report")
    outcome = "accepted" if report.accepted else "not_accepted"
    if pending:  # DuckDB, installed: the pending record becomes the report and the installed plan
        commit(workspace, pending[-1], attempt.ended(outcome), steps)
        report = pending[-1].report
    else:
        finish(report, loaded.installed, None, loaded.content_hash, loaded.rejected_build)
        report.last_attempt = attempt.ended(outcome)
        write_report(report, workspace)
        steps("report written")
        if report.installed:
            inc.record_installed(manifest, workspace)
    steps("recorded")
    report.last_attempt = attempt.finish(outcome)
    return loaded, report


def tracked(attempt: Attempt, hook: StepHook | None) -> StepHook:
    """The load's steps go to the attempt record first (a kill leaves the step it died in)."""

    def step(name: str) -> None:
        attempt.step(name)
        if hook:
            hook(name)

    return step


def _installed_before(previous: ValidationReport | None) -> InstalledBuild | None:
    """The warehouse in place before this build, from the previous report."""
    if previous is None:
        return None
    if previous.installed_build is not None:
        return previous.installed_build
    return installed_build(previous) if previous.installed else None


def validate_warehouse(manifest: Manifest, warehouse: str, workspace: str | Path,
                       interp: Interpretation | None = None) -> ValidationReport:
    """Validate the warehouse in place (the `validation_report` asset), after finishing what an
    interrupted build left. A failed or killed last attempt keeps the report STALE: checking
    the old warehouse again must not hide that the current data was never built."""
    with writing(workspace, "validate the warehouse in place", "validate", warehouse, record=False):
        with Target(warehouse) as target:
            report = validate(target, manifest, interp)
        if target_dialect(warehouse).file_based:
            report.warehouse_hash = content_hash(Path(warehouse))
            report.warehouse_identity = file_identity(Path(warehouse))
        report.stale_overrides = list(manifest.stale_overrides)
        report.installed_build = installed_build(report)
        report.last_attempt = last_attempt(workspace)
        report.stale_reason = stale_reason(workspace)
        if report.stale_reason:
            report.accepted = False
        write_report(report, workspace)
    return report


def shared_report(manifest: Manifest, warehouse: str, workspace: str | Path,
                  interp: Interpretation | None = None, write: bool = True) -> ValidationReport:
    """The validation of the warehouse in place, computed once per build: the report the build
    wrote when it describes this very file (same content hash), else validated afresh (and
    written when `write`). The `warehouse` asset's checks and `validation_report` share it.
    A STALE state (a later build failed or was killed) stays on it: never accepted then."""
    report = read_report(workspace) if target_dialect(warehouse).file_based else None
    if report is None or not report_describes(report, warehouse):
        if write:
            return validate_warehouse(manifest, warehouse, workspace, interp)
        with Target(warehouse) as target:
            report = validate(target, manifest, interp)
    stale = report.stale_reason or stale_reason(workspace)
    if stale:
        report.stale_reason, report.accepted = stale, False
    return report


def previous_interpretation(workspace: str | Path) -> Interpretation | None:
    """The last `interpretation.json`: its unchanged files keep their profiles."""
    path = Workspace(workspace).interpretation
    try:
        return Interpretation.model_validate_json(path.read_text(encoding="utf-8")) if path.exists() else None
    except (ValueError, OSError):
        return None


def summary(report: ValidationReport) -> str:
    lines = [f"accepted: {str(report.accepted).lower()}  ({report.warehouse})"]
    if report.stale_reason:
        lines.append(f"  STALE: {report.stale_reason}")
    lines.append(f"  installed: {installed_words(report)}")
    if report.last_attempt is not None:
        lines.append(f"  last attempt: {attempt_line(report.last_attempt)}")
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
