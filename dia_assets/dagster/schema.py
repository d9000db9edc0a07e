"""Dagster glue for the Schema Creator: schema_manifest -> warehouse (+ five checks)
-> validation_report. The work happens in `dia_assets.agents.schema_creator`."""



import hashlib
import json
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckKey,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    AssetsDefinition,
    AutomationCondition,
    Config,
    DataVersion,
    Failure,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableColumnDep,
    TableColumnLineage,
    TableSchema,
    asset,
    multi_asset,
    multi_asset_check,
)
from dagster_duckdb import DuckDBResource

from dia_assets.agents.schema_creator import build as sc
from dia_assets.agents.schema_creator import validate as v
from dia_assets.agents.schema_creator.lineage import table_lineage
from dia_assets.agents.schema_creator.markdown import decisions_markdown, er_markdown
from dia_assets.agents.schema_creator.state import stale_reason
from dia_assets.contracts.artifact import write_atomic
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.contracts.manifest import Manifest, ManifestTable
from dia_assets.contracts.report import ValidationReport
from dia_assets.dagster.resources.warehouse import warehouse_target
from dia_assets.dagster.resources.workspace import WorkspaceResource
from dia_assets.dagster.run_writer import LOAD, run_writer
from dia_assets.dagster.tables import (
    RAW_FILES,
    WAREHOUSE,
    raw_partition,
    table_key,
    table_metadata,
    table_spec,
    warehouse_placeholder_spec,
)
from dia_assets.platform import markdown
from dia_assets.platform.tables.stats import TableStats, installed_stats
from dia_assets.platform.warehouse.base import build_dialect

GROUP = "schema_creator"
# In the metadata of the warehouse step's Failure when the build was validated and refused: a
# verdict on the data, which the data sensor does not ask for again (dia_assets/dagster/sensors/run_outcome.py).
VERDICT_KEY = "dia/verdict"
RETIRED = "retired"  # data version of a table asset whose table left the manifest


def raw_asset_key(source_path: str) -> AssetKey:  # noqa: ARG001 - every file is a partition of one asset
    """The observable raw-file asset a table loads from, for column lineage: `raw_files`,
    whose partition `raw_partition(source_path)` is the file."""
    return RAW_FILES


def _manifest(workspace: WorkspaceResource) -> Manifest:
    return Manifest.read(workspace.tree.manifest)


@asset(deps=["interpretation"], group_name=GROUP, kinds={"python"}, code_version="1",
       description="The planned warehouse schema (schema/manifest.json, DDL, load SQL): tables, types, "
       "keys and how each column is parsed, from the interpretation plus the expert's overrides.")
def schema_manifest(context: AssetExecutionContext, workspace: WorkspaceResource, duckdb: DuckDBResource) -> MaterializeResult:
    """Plan the schema from interpretation.json plus the expert's overrides."""
    interp = Interpretation.read(workspace.tree.interpretation)
    target = warehouse_target(duckdb)
    dialect = build_dialect(target).name
    try:
        with run_writer(context, workspace.root_path, "plan", target):
            manifest, paths = sc.write_plan(interp, workspace.root_path, dialect)
    except Exception:
        report_stale(context, workspace)
        raise
    if manifest.stale_overrides:
        context.log.warning("stale overrides (ignored): " + "; ".join(
            f"line {s.line} {s.where}: {s.reason}" for s in manifest.stale_overrides))
    return MaterializeResult(metadata={
        "tables": len(manifest.tables),
        "decisions": len(manifest.decisions),
        "stale_overrides": MetadataValue.md("\n".join(
            f"- line {s.line or '?'} `{s.where}`: {s.reason}" for s in manifest.stale_overrides) or "none"),
        "kept_keys": MetadataValue.md("\n".join(
            f"- {d.table}: {d.what}" for d in manifest.decisions if d.origin in ("previous", "drift")) or "none"),
        # Markdown, not Mermaid: the open-source UI shows Mermaid as source text (er.mmd keeps it)
        "er_diagram": MetadataValue.md(er_markdown(manifest)),
        "decisions_table": MetadataValue.md(decisions_markdown(manifest)),
        **{f"path/{k}": MetadataValue.path(str(p)) for k, p in paths.items()},
    }, data_version=DataVersion(manifest_version(manifest)))


def manifest_version(manifest: Manifest) -> str:
    """A data version that changes only when the plan does (not its timestamp)."""
    body = manifest.model_dump(exclude={"generated_at", "interpretation_generated_at"})
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:16]


def report_stale(context: AssetExecutionContext, workspace: WorkspaceResource) -> None:
    """A failed build (writer.py marked report.json/md STALE): `validation_report` shows it too
    (an observation, since its own step will not run after a failed upstream step)."""
    reason = stale_reason(workspace.root_path)
    if reason is None:  # e.g. the workspace was busy: this step changed nothing
        return
    report = sc.read_report(workspace.root_path)
    context.log_event(AssetObservation(asset_key="validation_report", metadata={
        "accepted": False,
        "stale": True,
        "stale_reason": MetadataValue.md(f"**STALE / FAILED**: {reason}"),
        "report": MetadataValue.md(sc.report_markdown(report) if report else "no report yet"),
        "path/report_md": MetadataValue.path(str(workspace.tree.report_md)),
    }))


def warehouse_metadata(manifest: Manifest, counts: dict[str, int]) -> dict:
    """Column schema and lineage (from the load SQL) of every refined table, for the single
    `warehouse` asset (before table assets exist)."""
    columns, deps = [], {}
    meta: dict = {}
    for table in manifest.tables:
        lineage = table_lineage(table)
        cols = [
            TableColumn(name=c.name, type=c.type, description=f"{table.files_label()} (raw_files partition "
                        f"{', '.join(raw_partition(f.path) for f in table.files())}): {c.source_column}",
                        constraints=None)
            for c in table.columns
        ]
        meta[f"schema/{table.name}"] = TableSchema(columns=cols)
        for col in cols:
            columns.append(TableColumn(name=f"{table.name}.{col.name}", type=col.type, description=col.description))
        for col, sources in lineage.items():
            deps[f"{table.name}.{col}"] = [TableColumnDep(asset_key=raw_asset_key(table.source_path), column_name=s)
                                           for s in sources]
        meta[f"rows/{table.name}"] = counts.get(table.name, 0)
    meta["dagster/column_schema"] = TableSchema(columns=columns)
    meta["dagster/column_lineage"] = TableColumnLineage(deps_by_column=deps)
    return meta


class WarehouseConfig(Config):
    replace_anyway: bool = False  # install a build that is not accepted
    incremental: bool = True  # reload only the tables whose file or plan changed (incremental.py)


def _build(context: AssetExecutionContext, config: WarehouseConfig, workspace: WorkspaceResource,
           duckdb: DuckDBResource, only: set[str] | None = None) -> tuple[Manifest, dict, Interpretation | None]:
    """Load staging, refined and reject tables beside the warehouse, validate, then swap in.
    A build that is not accepted keeps the previous warehouse and fails the step."""
    manifest = _manifest(workspace)
    interp_path = workspace.tree.interpretation
    interp = Interpretation.read(interp_path) if interp_path.exists() else None
    # The report is written here too, so a load that fails a blocking check (and so never
    # reaches `validation_report`) still leaves the expert a report saying why.
    target = warehouse_target(duckdb)
    load_path = workspace.tree.load_result
    try:
        with run_writer(context, workspace.root_path, LOAD, target) as attempt:
            loaded, report = sc.load_and_validate(
                manifest, target, workspace.root_path, interp, replace_anyway=config.replace_anyway,
                incremental=config.incremental, attempt=attempt, only=only)
            write_atomic(load_path, loaded.to_json())
    except Exception:
        report_stale(context, workspace)
        raise
    if not report.installed:
        report_stale(context, workspace)
        raise Failure(
            description=f"the new build is not accepted, so the previous warehouse stays in place; "
            f"the build is kept at {report.rejected_build}. {sc.summary(report)}",
            metadata={"report": MetadataValue.path(str(workspace.tree.report_md)),
                      VERDICT_KEY: "not_accepted"},
        )
    common = {
        "accepted": report.accepted,
        "path/warehouse": MetadataValue.path(loaded.warehouse),
        "path/load_result": MetadataValue.path(str(load_path)),
        "path/load_sql": MetadataValue.path(str(workspace.tree.load)),
        "path/lineage": MetadataValue.path(str(workspace.tree.schema_lineage)),
    }
    return manifest, {"loaded": loaded, "common": common, "report": report}, interp


def table_version(table: ManifestTable) -> str:
    """A table's data version: its file's content and its plan, so an unchanged rebuild is not new data."""
    return hashlib.sha256(table.model_dump_json().encode()).hexdigest()[:16]


def _table_metadata(table: ManifestTable, stats: TableStats | None, load: object, common: dict) -> dict:
    """Row count and column statistics read from the installed table (`stats`); the load's
    own count only when the table could not be read."""
    return {
        **common, "dagster/row_count": MetadataValue.int(load.refined if load else 0),
        **table_metadata(table, stats),
        "rejected": MetadataValue.int(load.rejected if load else 0),
        "duplicates_removed": MetadataValue.int(load.duplicates_removed if load else 0),
    }


def _retired_metadata(name: str, common: dict) -> dict:
    return {**common, "retired": True, "dagster/row_count": MetadataValue.int(0),
            "retired_reason": f"`{name}` is no longer in the manifest (its file was removed or renamed): "
            "dropped from the warehouse; reload the code location to drop the asset"}


def rebuilt_beside(report: ValidationReport, selected: set[str], known: set[str]) -> dict[str, str]:
    """Tables this build changed that were not selected (an enforced foreign key to a selected
    table, or a full build where a subset could not run): table -> why."""
    record = report.reload
    if record is None:
        return {}
    why = record.fallback or "a full build ran"
    changed = {name: record.reasons.get(name, why) for name in record.reloaded}
    changed |= {r.table: r.reason for r in record.retired}
    return {name: reason for name, reason in changed.items() if name in known and name not in selected}


def warehouse_asset(tables: Sequence[ManifestTable] = (), interp: Interpretation | None = None,
                    stats: dict[str, TableStats] | None = None, description: str | None = None) -> AssetsDefinition:
    """The build (one DuckDB build and swap) as one multi-asset: one `warehouse/<table>` spec per
    table of the manifest read at load time, or the single `warehouse` asset without one.
    A subset of the tables (can_subset) is rebuilt on its own (incremental.subset_manifest)."""
    specs = [table_spec(t, interp, (stats or {}).get(t.name)) for t in tables] or [warehouse_placeholder_spec(description)]
    known = {t.name for t in tables}

    @multi_asset(name="warehouse", specs=specs, can_subset=True, description="Build, validate and swap in the warehouse "
                 "(or only the selected tables, with the ones that must be rebuilt with them).")
    def _warehouse(context: AssetExecutionContext, config: WarehouseConfig, workspace: WorkspaceResource,
                   duckdb: DuckDBResource) -> Iterator[MaterializeResult]:
        selected = {k.path[-1] for k in context.selected_asset_keys if k != WAREHOUSE}
        only = selected if known and selected != known else None
        manifest, built, _interp = _build(context, config, workspace, duckdb, only)
        loaded, common, report = built["loaded"], built["common"], built["report"]
        counts = {name: t.refined for name, t in loaded.tables.items()}
        if not known:
            yield MaterializeResult(asset_key=WAREHOUSE, metadata={
                **common, "dagster/row_count": sum(counts.values()),
                "rejected": sum(t.rejected for t in loaded.tables.values()),
                "duplicates_removed": sum(t.duplicates_removed for t in loaded.tables.values()),
                **warehouse_metadata(manifest, counts)})
            return
        new = [t.name for t in manifest.tables if t.name not in known]
        gone = sorted(known - {t.name for t in manifest.tables})
        if new or gone:
            context.log.warning(f"the manifest now has tables {new or 'none'} new and {gone or 'none'} gone since the "
                                "code location loaded: reload it (Deployment > Reload) to see them as assets")
        beside = rebuilt_beside(report, selected, known)
        plans = {t.name: t for t in manifest.tables}
        stats = installed_stats(workspace.root_path, warehouse_target(duckdb), sorted((selected | set(beside)) & set(plans)))
        # Every selected table asset gets an output (the specs are not skippable): a retired table
        # says so, and the checks, the report and the catalog after it run instead of being skipped.
        for name in gone:
            if name in selected:
                yield MaterializeResult(asset_key=table_key(name), data_version=DataVersion(RETIRED),
                                        metadata=_retired_metadata(name, common))
        for table in manifest.tables:
            if table.name in selected:
                yield MaterializeResult(asset_key=table_key(table.name), data_version=DataVersion(table_version(table)),
                                        metadata=_table_metadata(table, stats.get(table.name),
                                                                 loaded.tables.get(table.name), common))
        # A table rebuilt without being selected is new data too: recorded, with the reason (its
        # checks ran in the build's validation, not as Dagster checks of this run)
        for name, reason in beside.items():
            meta = (_table_metadata(plans[name], stats.get(name), loaded.tables.get(name), common) if name in plans
                    else _retired_metadata(name, common))
            context.log_event(AssetMaterialization(asset_key=table_key(name), metadata={
                **meta, "rebuilt_because": reason}))

    return _warehouse


def _report(workspace: WorkspaceResource, duckdb: DuckDBResource) -> ValidationReport:
    """The build's validation when it describes the installed file, else a fresh one (not
    written: `validation_report` writes). Checks only read."""
    return sc.shared_report(_manifest(workspace), warehouse_target(duckdb), workspace.root_path, write=False)


DBT_STAGING = ("DIA's build of the warehouse as one step (staging, refined and reject tables, validated and "
               "installed); with DIA_DBT_PROJECT the warehouse/<table> assets are then rebuilt from its staging "
               "tables by the dbt project's models.")

# The per-table share of each validation axis: (report field, blocking, description).
AXES = {
    "row_count_reconciliation": ("row_counts", True, "source rows = staged = refined + rejected + removed duplicates"),
    "column_coverage": ("column_coverage", True, "every source column carried, renamed or excluded with a reason"),
    "key_validity": ("key_validity", True, "primary keys unique and non-null; orphans only where allowed"),
    "load_integrity": ("load_integrity", False, "reject counts and reasons"),
    "test_queries": ("test_queries", True, "generated counts, joins and key lookups return expected counts"),
}


def item_table(item: object, tables: Sequence[str]) -> str | None:
    """The table a report item is about (test queries name it in their title)."""
    if getattr(item, "table", None):
        return item.table  # type: ignore[attr-defined]
    name = getattr(item, "name", "")
    for table in sorted(tables, key=len, reverse=True):
        if re.search(rf"(?<![\w]){re.escape(table)}(?![\w])", name):
            return table
    return None


def _summary(check: str, items: list) -> str:
    if check == "row_count_reconciliation":
        return "; ".join(f"{i.table}: {i.message}" for i in items) or "no tables"
    if check == "column_coverage":
        return "; ".join(f"{i.table}: missing {i.missing}" for i in items if i.missing) or "all columns covered"
    if check == "key_validity":
        bad = [f"{i.table} {i.kind} {i.columns}: {i.duplicate_keys} dup, {i.null_keys} null, {i.orphan_rows} orphans"
               f"{' e.g. ' + ', '.join(i.examples[:5]) if i.examples else ''}" for i in items if not i.passed]
        return "; ".join(bad) or f"{len(items)} keys valid"
    if check == "load_integrity":
        return "; ".join(f"{i.table}: {i.message}" for i in items) or "no tables"
    failed = [f"{q.name}: {q.error}" for q in items if not q.passed]
    return "; ".join(failed) or f"{len(items)} queries pass"


def _numbers(check: str, items: list) -> dict:
    """Numeric metadata, so the check's Plots panel shows its history."""
    out = {"checked": MetadataValue.int(len(items)), "failing": MetadataValue.int(sum(not i.passed for i in items))}
    sums = {"row_count_reconciliation": ("source_rows", "refined", "rejected", "duplicates_removed"),
            "key_validity": ("duplicate_keys", "null_keys", "orphan_rows"),
            "load_integrity": ("rejected", "values_nulled")}.get(check, ())
    for field in sums:
        out[field] = MetadataValue.int(sum(getattr(i, field) for i in items))
    if check == "column_coverage":
        out |= {"carried": MetadataValue.int(sum(len(i.carried) for i in items)),
                "excluded": MetadataValue.int(sum(len(i.excluded) for i in items)),
                "missing": MetadataValue.int(sum(len(i.missing) for i in items))}
    if check == "load_integrity" and items:
        out["reject_fraction"] = MetadataValue.float(max(i.reject_fraction for i in items))
    return out


def _value(value: object) -> str:
    if isinstance(value, list):
        return ", ".join(map(str, value[:5])) + (f" (+{len(value) - 5})" if len(value) > 5 else "")
    if isinstance(value, dict):
        return "; ".join(f"{k}: {v}" for k, v in value.items()) or "-"
    return "-" if value is None else str(value)


def _details(items: list) -> str:
    """The items as a Markdown table: what passed, what failed, and the figures."""
    if not items:
        return "nothing to check"
    fields = [f for f in type(items[0]).model_fields if f not in ("sql", "passed")]
    return markdown.table(["passed", *fields],
                          [["yes" if i.passed else "NO", *(_value(getattr(i, f)) for f in fields)] for i in items])


def check_result(key: AssetCheckKey, report: ValidationReport, table: str | None, tables: Sequence[str],
                 current: set[str] | None = None) -> AssetCheckResult:
    """One axis of the validation, for one table (`table`) or the whole warehouse (None);
    `current`: the tables of the manifest now (a table asset not among them is retired)."""
    field = AXES[key.name][0]
    items = [i for i in getattr(report, field) if table is None or item_table(i, tables) == table]
    stale = report.stale_reason
    if table is not None and current is not None and table not in current and not stale:
        return AssetCheckResult(asset_key=key.asset_key, check_name=key.name, passed=True,
                                severity=AssetCheckSeverity.ERROR, metadata={"retired": True},
                                description=f"retired: `{table}` is no longer in the manifest (its file was removed "
                                "or renamed), so the warehouse has no such table to check")
    passed = not stale and not any(v.blocks(i) for i in items)
    description = f"STALE: {stale}. The last build's findings: " if stale else ""
    return AssetCheckResult(
        asset_key=key.asset_key, check_name=key.name, passed=passed, severity=AssetCheckSeverity.ERROR,
        description=(description + _summary(key.name, items))[:2000],
        metadata={**_numbers(key.name, items), "details": MetadataValue.md(_details(items)),
                  "failing_items": ", ".join(str(getattr(i, "table", getattr(i, "name", ""))) for i in items if not i.passed)
                  or "none"},
    )


def _last_report(workspace: WorkspaceResource) -> ValidationReport | None:
    """While the state is STALE (the last build failed, was killed or was not installed), the
    report of the last build with the reason: checking the old warehouse would pass and hide why
    the current data is not in it."""
    stale = stale_reason(workspace.root_path)
    if not stale:
        return None
    report = sc.read_report(workspace.root_path) or ValidationReport(
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"), warehouse="(none)")
    report.stale_reason = stale
    return report


def warehouse_checks(tables: Sequence[ManifestTable] = ()) -> AssetChecksDefinition:
    """The five validation checks on each table asset (each its share of the validation), or on
    the single `warehouse` asset. One op computes the validation once and reports every check."""
    names = [t.name for t in tables]
    keys = [table_key(n) for n in names] or [WAREHOUSE]
    specs = [AssetCheckSpec(name, asset=key, blocking=blocking, description=desc)
             for key in keys for name, (_, blocking, desc) in AXES.items()]

    @multi_asset_check(name="warehouse_checks", specs=specs, can_subset=True,
                       description="Validation of the warehouse in place, reported per table.")
    def _checks(context: AssetCheckExecutionContext, workspace: WorkspaceResource,
                duckdb: DuckDBResource) -> Iterator[AssetCheckResult]:
        report = _last_report(workspace) or _report(workspace, duckdb)
        current = {t.name for t in _manifest(workspace).tables}
        for key in sorted(context.selected_asset_check_keys, key=lambda k: (k.asset_key.to_user_string(), k.name)):
            table = key.asset_key.path[-1] if names else None
            yield check_result(key, report, table, names, current)

    return _checks


def validation_report_asset(deps: Sequence[AssetKey] = (WAREHOUSE,)) -> AssetsDefinition:
    @asset(name="validation_report", deps=list(deps), group_name=GROUP, kinds={"python"}, code_version="1",
           # the report follows every new warehouse without a sensor or a click
           automation_condition=AutomationCondition.eager(),
           description="The validation report of the whole warehouse (validation/report.json and .md): row counts, "
           "column coverage, keys, rejects and test queries; `accepted` only when every check passes.")
    def validation_report(workspace: WorkspaceResource, duckdb: DuckDBResource) -> MaterializeResult:
        manifest = _manifest(workspace)
        interp_path = workspace.tree.interpretation
        interp = Interpretation.read(interp_path) if interp_path.exists() else None
        report = sc.shared_report(manifest, warehouse_target(duckdb), workspace.root_path, interp)
        md = sc.report_markdown(report)
        return MaterializeResult(metadata={
            "accepted": report.accepted,
            "stale": bool(report.stale_reason),
            "stale_overrides": len(report.stale_overrides),
            "axes": MetadataValue.md(markdown.table(["axis", "passed", "summary"], [
                [k, "yes" if a.passed else "NO", a.summary] for k, a in report.axes.items()])),
            "report": MetadataValue.md(md),
            "path/report_json": MetadataValue.path(str(workspace.tree.report)),
            "path/report_md": MetadataValue.path(str(workspace.tree.report_md)),
        })

    return validation_report


def schema_definitions(tables: Sequence[ManifestTable] = (), interp: Interpretation | None = None,
                       stats: dict[str, TableStats] | None = None, dbt_project: str | Path | None = None,
                       ) -> tuple[list[AssetsDefinition], list[AssetChecksDefinition]]:
    """Assets and checks of the Schema Creator for the tables of a manifest (none: one `warehouse`);
    `stats` (of the installed tables) puts their figures in the column schemas the UI shows.
    With `dbt_project` (DIA_DBT_PROJECT) the `warehouse/<table>` assets are the project's models
    (dagster-dbt) and DIA's own build is the single `warehouse` asset they read staging from."""
    keys = [table_key(t.name) for t in tables] or [WAREHOUSE]
    if dbt_project is not None and tables:
        from dia_assets.dagster.dbt_models import dbt_table_assets

        build = [warehouse_asset(description=DBT_STAGING), dbt_table_assets(dbt_project, tables)]
    else:
        build = [warehouse_asset(tables, interp, stats)]
    return ([schema_manifest, *build, validation_report_asset(keys)], [warehouse_checks(tables)])


schema_assets, schema_checks = schema_definitions()
__all__ = ["schema_assets", "schema_checks", "schema_definitions"]
