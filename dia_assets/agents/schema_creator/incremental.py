"""Incremental reloads: when one file changes, only its tables are loaded again.

The previous build's manifest (`schema/installed_manifest.json`, written when a build is
installed) says which content hash and which plan each table was built from. A table whose
plan is unchanged (same file bytes, same columns, keys and options) is carried over; the
others are reloaded from their files, and a table whose source is gone is retired (dropped
with its staging and reject tables, and recorded in the report).

The atomic guarantees of a full build hold: the previous warehouse file is copied beside
the target, the changed tables are rebuilt in the copy, the copy is validated, and only an
accepted copy is renamed over the target (`swap.install`). Validation runs on the reloaded
tables and on every table with a key pointing at one; the previous report's figures stand for
the rest, which are byte-for-byte the tables it validated.

A subset build (one `warehouse/<table>` asset materialized on its own) is the same reload with
the tables chosen rather than detected: the selected tables get their current plan, every other
table keeps the plan it was built from (`subset_manifest`), so what changed elsewhere is still
seen as changed by the next build.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from dia_assets.agents.schema_creator import swap
from dia_assets.agents.schema_creator.load import (
    BeforeInstall,
    LoadResult,
    StepHook,
    TableLoad,
    build_into,
    check_sources,
)
from dia_assets.agents.schema_creator.validate import decide, validate
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.contracts.manifest import Manifest, ManifestTable
from dia_assets.contracts.report import ReloadRecord, RetiredTable, ValidationReport
from dia_assets.platform.naming import quote_ident as q
from dia_assets.platform.tables.target import Target
from dia_assets.platform.workspace import Workspace


def installed_manifest_path(workspace: str | Path) -> Path:
    return Workspace(workspace).installed_manifest


def record_installed(manifest: Manifest, workspace: str | Path) -> None:
    """Remember the plan the warehouse in place was built from (the next reload's baseline)."""
    manifest.write(installed_manifest_path(workspace))


def installed_manifest(workspace: str | Path) -> Manifest | None:
    path = installed_manifest_path(workspace)
    try:
        return Manifest.read(path) if path.exists() else None
    except (ValueError, OSError):
        return None


@dataclass
class ReloadPlan:
    mode: str = "incremental"  # or "subset": the tables were selected, not detected
    reload: list[str] = field(default_factory=list)
    keep: list[str] = field(default_factory=list)
    retire: list[RetiredTable] = field(default_factory=list)
    revalidate: list[str] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)

    def record(self, fallback: str | None = None) -> ReloadRecord:
        return ReloadRecord(mode=self.mode, reloaded=list(self.reload), kept=list(self.keep),
                            revalidated=list(self.revalidate), retired=list(self.retire),
                            reasons=dict(self.reasons), fallback=fallback)


def retired_tables(previous: Manifest | None, manifest: Manifest) -> list[RetiredTable]:
    """Tables of the previous build that the new plan no longer has, and why."""
    if previous is None:
        return []
    names = {t.name for t in manifest.tables}
    data = Path(manifest.data_dir)
    read_by = {f.path: t.name for t in manifest.tables for f in t.files()}
    out = []
    for table in previous.tables:
        if table.name in names:
            continue
        label = " + ".join(f.path for f in table.files())
        gone = not any((data / f.path).exists() for f in table.files())
        now = sorted({read_by[f.path] for f in table.files() if f.path in read_by})
        out.append(RetiredTable(table=table.name, source_path=table.source_path,
                                reason=f"{label} was deleted" if gone else
                                f"{label} is now read as part of table(s) {', '.join(now)}" if now else
                                f"{label} no longer yields source {table.sources[0]!r} "
                                "(excluded, renamed or unreadable)"))
    return out


def changed_files(old: ManifestTable, new: ManifestTable) -> str:
    """Which of a table's files changed, came or went."""
    before = {f.path: f.content_hash for f in old.files()}
    after = {f.path: f.content_hash for f in new.files()}
    return ", ".join([f"{p} changed" for p in after if p in before and before[p] != after[p]]
                     + [f"{p} added" for p in after if p not in before]
                     + [f"{p} removed" for p in before if p not in after]) + " (content hash)"


def enforced_dependents(previous: Manifest, rebuilt: set[str], present: set[str]) -> dict[str, str]:
    """Tables of `present` that DuckDB will not keep while a table they reference by a declared
    (enforced) foreign key is dropped, transitively: child -> the rebuilt parent it references."""
    out: dict[str, str] = {}
    gone = set(rebuilt)
    grew = True
    while grew:
        grew = False
        for table in previous.tables:
            if table.name in gone or table.name not in present:
                continue
            parent = next((fk.ref_table for fk in table.foreign_keys if fk.enforced and fk.ref_table in gone), None)
            if parent:
                out[table.name] = parent
                gone.add(table.name)
                grew = True
    return out


def subset_manifest(previous: Manifest, manifest: Manifest, selected: set[str]) -> Manifest:
    """The plan of a build of only the `selected` tables (and the tables that must be rebuilt
    with them, `enforced_dependents`): their current plan, a selected table the plan no longer
    has is retired; every other table keeps the plan the warehouse in place was built from, and
    a new table nobody selected is not built."""
    current = {t.name: t for t in manifest.tables}
    chosen = set(selected) | set(enforced_dependents(previous, set(selected), set(current)))
    before = {t.name: t for t in previous.tables}
    tables = [current[n] if n in chosen else before[n] for n in current if n in chosen or n in before]
    tables += [t for t in previous.tables if t.name not in current and t.name not in chosen]
    return manifest.model_copy(update={"tables": tables})


def plan_reload(previous: Manifest, manifest: Manifest, selected: set[str] | None = None) -> ReloadPlan:
    """Which tables to reload, keep, retire and validate again; `selected`: a subset build, whose
    tables are reloaded even when unchanged (asked for by name)."""
    plan = ReloadPlan(retire=retired_tables(previous, manifest), mode="subset" if selected is not None else "incremental")
    before = {t.name: t for t in previous.tables}
    for table in manifest.tables:
        old = before.get(table.name)
        if old is None:
            plan.reasons[table.name] = f"new table from {table.files_label()}"
        elif old.content_hash != table.content_hash:
            plan.reasons[table.name] = changed_files(old, table)
        elif old.model_dump() != table.model_dump():
            plan.reasons[table.name] = "its plan changed (columns, keys or options)"
        elif table.name in (selected or ()):
            plan.reasons[table.name] = "selected: materialized on its own"
    # DuckDB will not drop a table another one's declared foreign key references: such a child
    # is rebuilt too (its file is read again). A table whose key to it is not declared is only
    # validated again (orphans are measured against the new parent).
    present = {t.name for t in manifest.tables}
    for child, parent in enforced_dependents(previous, set(plan.reasons) | {r.table for r in plan.retire},
                                             present).items():
        plan.reasons.setdefault(child, f"references {parent}, which is rebuilt")
    plan.reload = [t.name for t in manifest.tables if t.name in plan.reasons]
    plan.keep = [t.name for t in manifest.tables if t.name not in plan.reasons]
    pointing = {t.name for t in manifest.tables if any(fk.ref_table in plan.reasons for fk in t.foreign_keys)}
    plan.revalidate = [t.name for t in manifest.tables if t.name in plan.reasons or t.name in pointing]
    return plan


def _plan_changed(previous: Manifest | None, manifest: Manifest) -> str | None:
    """Why the plan of the warehouse in place is not one a reload can start from, on any engine."""
    if previous is None:
        return "no record of the plan the warehouse in place was built from"
    if previous.data_dir != manifest.data_dir or previous.dialect != manifest.dialect:
        return "the data folder or the dialect changed"
    return None


def unusable_reason(previous: Manifest | None, manifest: Manifest, report: ValidationReport | None,
                    target: Path) -> str | None:
    """Why the warehouse in place cannot be the base of an incremental reload, or None."""
    from dia_assets.agents.schema_creator.report_files import report_describes

    if reason := _plan_changed(previous, manifest):
        return reason
    if not target.exists():
        return "no warehouse in place"
    if swap.wal_of(target).exists():
        return "the warehouse in place has a write-ahead log beside it"
    if report is None or not report.accepted or report.stale_reason or not report_describes(report, target):
        return "the validation report does not describe an accepted warehouse in place"
    return None


def reload_duckdb(
    previous: Manifest, manifest: Manifest, plan: ReloadPlan, target: str | Path, before: ValidationReport,
    interp: Interpretation | None = None, hook: StepHook | None = None, replace_anyway: bool = False,
    before_install: BeforeInstall | None = None,
) -> tuple[LoadResult, ValidationReport]:
    """Copy the warehouse in place, rebuild the planned tables in the copy, validate, swap."""
    target = Path(target).resolve()
    changed = [t for t in manifest.tables if t.name in plan.reload]
    check_sources(manifest.model_copy(update={"tables": changed}), manifest.data_dir)

    def rebuild(con: duckdb.DuckDBPyConnection) -> LoadResult:
        _drop(con, previous, set(plan.reload) | {r.table for r in plan.retire})
        known = {name: TableLoad(name=name, primary_key_enforced=_has_primary_key(con, name)) for name in plan.keep}
        return build_into(con, manifest.model_copy(update={"tables": changed}), manifest.data_dir, hook, known)

    def check(path: Path) -> ValidationReport:
        if hook:
            hook("validate")
        return _validate(lambda: Target(path), manifest, plan, before, interp)

    done = swap.build_beside(target, rebuild, check,
                             lambda report: report.accepted or replace_anyway, hook, start_from=target,
                             before_install=before_install)
    result, report = done.built, done.verdict
    _carry_stats(result, before, plan.keep)
    if not done.installed:
        result.installed, result.rejected_build = False, str(done.final)
    result.warehouse = str(target)
    result.content_hash = done.digest
    report.warehouse = str(target)
    return result, report


def unusable_reason_pg(previous: Manifest | None, manifest: Manifest, report: ValidationReport | None,
                       url: str) -> str | None:
    """Why the PostgreSQL tables in place cannot be the base of an incremental reload, or None."""
    import psycopg

    from dia_assets.agents.schema_creator.postgres import LAYERS

    if reason := _plan_changed(previous, manifest):
        return reason
    if report is None or not report.accepted or not report.installed or report.stale_reason:
        return "the validation report does not describe an accepted warehouse in place"
    with psycopg.connect(url, autocommit=True) as pg:
        missing = [f"{layer}.{t.name}" for t in previous.tables for layer in LAYERS
                   if pg.execute("SELECT to_regclass(%s)", (f"{q(layer)}.{q(t.name)}",)).fetchone()[0] is None]
    return f"tables of the previous build are not installed ({', '.join(missing[:3])})" if missing else None


def reload_postgres(
    previous: Manifest, manifest: Manifest, plan: ReloadPlan, url: str, before: ValidationReport,
    interp: Interpretation | None = None, hook: StepHook | None = None, replace_anyway: bool = False,
) -> tuple[LoadResult, ValidationReport]:
    """The planned tables into build schemas, validated there beside the kept tables (which stay
    installed, untouched), then swapped in; the retired ones are moved out and dropped."""
    from dia_assets.agents.schema_creator.postgres import load_postgres

    reports: list[ValidationReport] = []
    reloaded = frozenset(plan.reload)

    def check(schemas: dict[str, str]) -> bool:
        if hook:
            hook("validate")
        reports.append(_validate(lambda: Target(url, schemas=schemas, only=reloaded), manifest, plan, before, interp))
        return reports[-1].accepted

    result = load_postgres(manifest, manifest.data_dir, url, hook, check, replace_anyway, keep=plan.keep,
                           retire=[r.table for r in plan.retire])
    _carry_stats(result, before, plan.keep)
    report = reports[-1]
    report.warehouse = result.warehouse
    return result, report


def _drop(con: duckdb.DuckDBPyConnection, previous: Manifest, names: set[str]) -> None:
    """Drop refined, staging and reject tables, children first (manifest order is parents first)."""
    for table in reversed(previous.tables):
        if table.name in names:
            con.execute(f"DROP TABLE IF EXISTS main.{q(table.name)}").fetchall()
            con.execute(f"DROP TABLE IF EXISTS staging.{q(table.name)}").fetchall()
            con.execute(f"DROP TABLE IF EXISTS rejects.{q(table.name)}").fetchall()


def _has_primary_key(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    return bool(con.execute(
        "SELECT count(*) FROM duckdb_constraints() WHERE schema_name = 'main' AND table_name = ? "
        "AND constraint_type = 'PRIMARY KEY'", [table]).fetchone()[0])


def _carry_stats(result: LoadResult, before: ValidationReport, keep: list[str]) -> None:
    """A kept table's load figures are the previous report's (the table is the same bytes)."""
    rows = {r.table: r for r in before.row_counts}
    nulled = {r.table: r.values_nulled for r in before.load_integrity}
    for name in keep:
        stats, r = result.tables[name], rows.get(name)
        if r is not None:
            stats.staged, stats.refined, stats.rejected = r.staged, r.refined, r.rejected
            stats.unparsed_lines, stats.duplicates_removed = r.unparsed_lines, r.duplicates_removed
        stats.values_nulled = nulled.get(name, 0)
        stats.notes.append("kept from the previous build (incremental reload)")


def query_table(name: str, tables: list[str]) -> str | None:
    """The table a generated test query (validate.generate_test_queries) is about."""
    for t in sorted(tables, key=len, reverse=True):
        if name in (f"count {t}", f"first row of {t} from staging", f"lookup {t} by key") or \
                name.startswith((f"rows per {t}(", f"sum {t}.")):
            return t
    return None


def _validate(building: Callable[[], Target], manifest: Manifest, plan: ReloadPlan, before: ValidationReport,
              interp: Interpretation | None) -> ValidationReport:
    """Checks on the revalidated tables; the previous report's entries for the others."""
    again = set(plan.revalidate)
    subset = manifest.model_copy(update={"tables": [t for t in manifest.tables if t.name in again]})
    with building() as target:
        report = validate(target, subset, interp)
    order = {t.name: i for i, t in enumerate(manifest.tables)}
    kept = set(plan.keep) - again

    def merged(old: list, new: list) -> list:
        carried = [x for x in old if x.table in kept]
        return sorted(carried + new, key=lambda x: order.get(x.table, len(order)))

    report.row_counts = merged(before.row_counts, report.row_counts)
    report.column_coverage = merged(before.column_coverage, report.column_coverage)
    report.key_validity = merged(before.key_validity, report.key_validity)
    report.load_integrity = merged(before.load_integrity, report.load_integrity)
    names = list(order)
    carried = [x for x in before.test_queries if query_table(x.name, names) in kept]
    report.test_queries = sorted(carried + report.test_queries,
                                 key=lambda x: order.get(query_table(x.name, names) or "", len(order)))
    decide(report, manifest, interp)
    report.reload = plan.record()
    return report
