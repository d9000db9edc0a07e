"""Dagster glue for the Schema Creator: schema_manifest -> warehouse (+ five checks)
-> validation_report. The work happens in `dia_assets.agents.schema_creator`."""


from pathlib import Path

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetExecutionContext,
    AssetKey,
    AssetObservation,
    AutomationCondition,
    Config,
    Failure,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableColumnDep,
    TableColumnLineage,
    TableSchema,
    asset,
    asset_check,
)
from dagster_duckdb import DuckDBResource

from dia_assets.agents.interpreter.names import raw_key_name
from dia_assets.agents.locations import is_postgres
from dia_assets.agents.schema_creator import build as sc
from dia_assets.agents.schema_creator import validate as v
from dia_assets.agents.schema_creator.lineage import table_lineage
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.contracts.manifest import Manifest
from dia_assets.contracts.report import ValidationReport
from resources.warehouse import warehouse_target
from resources.workspace import WorkspaceResource

GROUP = "schema_creator"


def raw_asset_key(source_path: str) -> AssetKey:  # noqa: ARG001 - every file is a partition of one asset
    """The observable raw-file asset a table loads from, for column lineage: `raw_files`,
    whose partition `raw_partition(source_path)` is the file."""
    return AssetKey("raw_files")


def raw_partition(source_path: str) -> str:
    return raw_key_name(Path(source_path).as_posix())


def _manifest(workspace: WorkspaceResource) -> Manifest:
    return Manifest.read(workspace.path("schema", "manifest.json"))


@asset(deps=["interpretation"], group_name=GROUP, kinds={"python"})
def schema_manifest(context: AssetExecutionContext, workspace: WorkspaceResource, duckdb: DuckDBResource) -> MaterializeResult:
    """Plan the schema from interpretation.json plus the expert's overrides."""
    interp = Interpretation.read(workspace.path("interpretation.json"))
    dialect = "postgres" if is_postgres(warehouse_target(duckdb)) else "duckdb"
    try:
        manifest, paths = sc.write_plan(interp, workspace.root_path, dialect)
    except Exception as exc:
        report_stale(context, workspace, f"schema_manifest failed for the current data: {exc}")
        raise
    er = paths["er"].read_text(encoding="utf-8")
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
        "er_diagram": MetadataValue.md(f"```mermaid\n{er}```"),
        **{f"path/{k}": MetadataValue.path(str(p)) for k, p in paths.items()},
    })


def report_stale(context: AssetExecutionContext, workspace: WorkspaceResource, reason: str) -> None:
    """A failed build: report.json/md stop saying accepted, and `validation_report` shows it
    (an observation, since its own step will not run after a failed upstream step)."""
    report = sc.mark_stale(workspace.root_path, reason)
    context.log_event(AssetObservation(asset_key="validation_report", metadata={
        "accepted": False,
        "stale": True,
        "stale_reason": MetadataValue.md(f"**STALE / FAILED**: {reason}"),
        "report": MetadataValue.md(sc.report_markdown(report) if report else "no report yet"),
        "path/report_md": MetadataValue.path(str(workspace.path("validation", "report.md"))),
    }))


def warehouse_metadata(manifest: Manifest, counts: dict[str, int]) -> dict:
    """Column schema and lineage (from the load SQL) of every refined table."""
    columns, deps = [], {}
    meta: dict = {}
    for table in manifest.tables:
        lineage = table_lineage(table)
        cols = [
            TableColumn(name=c.name, type=c.type, description=f"{table.source_ref} (raw_files partition "
                        f"{raw_partition(table.source_path)}): {c.source_column}",
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


@asset(deps=[schema_manifest], group_name=GROUP, kinds={"duckdb"})
def warehouse(context: AssetExecutionContext, config: WarehouseConfig, workspace: WorkspaceResource,
              duckdb: DuckDBResource) -> MaterializeResult:
    """Load staging, refined and reject tables beside the warehouse, validate, then swap in.
    A build that is not accepted keeps the previous warehouse and fails this step."""
    manifest = _manifest(workspace)
    interp_path = workspace.path("interpretation.json")
    # The report is written here too, so a load that fails a blocking check (and so never
    # reaches `validation_report`) still leaves the expert a report saying why.
    loaded, report = sc.load_and_validate(
        manifest, warehouse_target(duckdb), workspace.root_path,
        Interpretation.read(interp_path) if interp_path.exists() else None,
        replace_anyway=config.replace_anyway, incremental=config.incremental)
    load_path = workspace.path("schema", "load_result.json")
    load_path.write_text(loaded.to_json(), encoding="utf-8")
    if not report.installed:
        report_stale(context, workspace, report.stale_reason or "the new build was not installed")
        raise Failure(
            description=f"the new build is not accepted, so the previous warehouse stays in place; "
            f"the build is kept at {report.rejected_build}. {sc.summary(report)}",
            metadata={"report": MetadataValue.path(str(workspace.path("validation", "report.md")))},
        )
    counts = {name: t.refined for name, t in loaded.tables.items()}
    return MaterializeResult(metadata={
        "accepted": report.accepted,
        "dagster/row_count": sum(counts.values()),
        "rejected": sum(t.rejected for t in loaded.tables.values()),
        "duplicates_removed": sum(t.duplicates_removed for t in loaded.tables.values()),
        "path/warehouse": MetadataValue.path(loaded.warehouse),
        "path/load_result": MetadataValue.path(str(load_path)),
        "path/load_sql": MetadataValue.path(str(workspace.path("schema", "load.sql"))),
        "path/lineage": MetadataValue.path(str(workspace.path("schema", "lineage.json"))),
        **warehouse_metadata(manifest, counts),
    })


def _report(workspace: WorkspaceResource, duckdb: DuckDBResource):  # noqa: ANN202
    """The build's validation when it describes the installed file, else a fresh one (not
    written: `validation_report` writes). Checks run as parallel steps; each only reads."""
    return sc.shared_report(_manifest(workspace), warehouse_target(duckdb), workspace.root_path, write=False)


def _stale(workspace: WorkspaceResource, axis: str) -> AssetCheckResult | None:
    """A failed check while the report says the warehouse is stale (a later build failed or was
    not installed): checking the old warehouse would pass and hide why the new data was
    refused, so the check reports the last build's findings for its axis instead."""
    path = workspace.path("validation", "report.json")
    if not path.exists():
        return None
    report = ValidationReport.read(path)
    if not report.stale_reason:
        return None
    failing = [i.model_dump() for i in getattr(report, axis) if not i.passed]
    return AssetCheckResult(
        passed=False, severity=AssetCheckSeverity.ERROR,
        description=f"STALE: {report.stale_reason}. The last build's {axis}: {len(failing)} failing",
        metadata={"stale_reason": report.stale_reason, "details": MetadataValue.json(failing),
                  "failing": [i.get("table", i.get("name", "")) for i in failing]},
    )


def _result(items: list, summary: str) -> AssetCheckResult:
    passed = not any(v.blocks(i) for i in items)
    return AssetCheckResult(
        passed=passed, severity=AssetCheckSeverity.ERROR, description=summary,
        metadata={"details": MetadataValue.json([i.model_dump() for i in items]),
                  "failing": [getattr(i, "table", getattr(i, "name", "")) for i in items if not i.passed]},
    )


@asset_check(asset=warehouse, blocking=True, description="source rows = staged = refined + rejected + removed duplicates")
def row_count_reconciliation(workspace: WorkspaceResource, duckdb: DuckDBResource) -> AssetCheckResult:
    if (stale := _stale(workspace, "row_counts")) is not None:
        return stale
    items = _report(workspace, duckdb).row_counts
    return _result(items, "; ".join(f"{i.table}: {i.message}" for i in items))


@asset_check(asset=warehouse, blocking=True, description="every source column carried, renamed or excluded with a reason")
def column_coverage(workspace: WorkspaceResource, duckdb: DuckDBResource) -> AssetCheckResult:
    if (stale := _stale(workspace, "column_coverage")) is not None:
        return stale
    items = _report(workspace, duckdb).column_coverage
    return _result(items, "; ".join(f"{i.table}: missing {i.missing}" for i in items if i.missing) or "all columns covered")


@asset_check(asset=warehouse, blocking=True, description="primary keys unique and non-null; orphans only where allowed")
def key_validity(workspace: WorkspaceResource, duckdb: DuckDBResource) -> AssetCheckResult:
    if (stale := _stale(workspace, "key_validity")) is not None:
        return stale
    items = _report(workspace, duckdb).key_validity
    bad = [f"{i.table} {i.kind} {i.columns}: {i.duplicate_keys} dup, {i.null_keys} null, {i.orphan_rows} orphans"
           f"{' e.g. ' + ', '.join(i.examples[:5]) if i.examples else ''}" for i in items if not i.passed]
    return _result(items, "; ".join(bad) or f"{len(items)} keys valid")


@asset_check(asset=warehouse, blocking=False, description="reject counts and reasons per table")
def load_integrity(workspace: WorkspaceResource, duckdb: DuckDBResource) -> AssetCheckResult:
    if (stale := _stale(workspace, "load_integrity")) is not None:
        return stale
    items = _report(workspace, duckdb).load_integrity
    return _result(items, "; ".join(f"{i.table}: {i.message}" for i in items))


@asset_check(asset=warehouse, blocking=True, description="generated counts, joins and key lookups return expected counts")
def test_queries(workspace: WorkspaceResource, duckdb: DuckDBResource) -> AssetCheckResult:
    if (stale := _stale(workspace, "test_queries")) is not None:
        return stale
    items = _report(workspace, duckdb).test_queries
    failed = [f"{q.name}: {q.error}" for q in items if not q.passed]
    return _result(items, "; ".join(failed) or f"{len(items)} queries pass")


@asset(deps=[warehouse], group_name=GROUP, kinds={"python"},
       # the report follows every new warehouse without a sensor or a click
       automation_condition=AutomationCondition.eager())
def validation_report(context: AssetExecutionContext, workspace: WorkspaceResource, duckdb: DuckDBResource) -> MaterializeResult:
    """validation/report.json and report.md; `accepted` only when every check passes."""
    manifest = _manifest(workspace)
    interp_path = workspace.path("interpretation.json")
    interp = Interpretation.read(interp_path) if interp_path.exists() else None
    report = sc.shared_report(manifest, warehouse_target(duckdb), workspace.root_path, interp)
    md = sc.report_markdown(report)
    return MaterializeResult(metadata={
        "accepted": report.accepted,
        "stale": False,
        "stale_overrides": len(report.stale_overrides),
        "axes": MetadataValue.json({k: a.model_dump() for k, a in report.axes.items()}),
        "report": MetadataValue.md(md),
        "path/report_json": MetadataValue.path(str(workspace.path("validation", "report.json"))),
        "path/report_md": MetadataValue.path(str(workspace.path("validation", "report.md"))),
    })


schema_assets = [schema_manifest, warehouse, validation_report]
schema_checks = [row_count_reconciliation, column_coverage, key_validity, load_integrity, test_queries]
__all__ = ["schema_assets", "schema_checks"]
