"""One asset spec per refined table, read from the manifest a previous build wrote, the way
dagster-dbt builds assets from `manifest.json`. Without a manifest (first start) there are no
table specs and the build is one `warehouse` asset until the code location is reloaded."""

from __future__ import annotations

import logging
from pathlib import Path

from dagster import (
    AssetKey,
    AssetSpec,
    MetadataValue,
    TableColumn,
    TableColumnConstraints,
    TableColumnDep,
    TableColumnLineage,
    TableConstraints,
    TableMetadataValue,
    TableRecord,
    TableSchema,
)

from dia_assets.agents.interpreter.names import raw_key_name
from dia_assets.agents.schema_creator.lineage import table_lineage
from dia_assets.agents.schema_creator.markdown import foreign_key_targets, lineage_markdown
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.contracts.manifest import Manifest, ManifestTable
from dia_assets.platform.settings import get_settings
from dia_assets.platform.tables.stats import TableStats, cached_stats
from dia_assets.platform.warehouse.base import target_dialect
from dia_assets.platform.workspace import Workspace

WAREHOUSE_GROUP = "warehouse"
WAREHOUSE = AssetKey("warehouse")
RAW_FILES = AssetKey("raw_files")
log = logging.getLogger(__name__)


def table_key(table: str) -> AssetKey:
    """`warehouse/<table>` in the UI."""
    return AssetKey(["warehouse", table])


def raw_partition(source_path: str) -> str:
    """The `raw_files` partition of a table's file."""
    return raw_key_name(Path(source_path).as_posix())


def manifest_tables(workspace: str | Path) -> list[ManifestTable]:
    """Tables of `<workspace>/schema/manifest.json`, or none when there is no readable manifest
    (said in the log: the graph then loads with the single `warehouse` asset)."""
    path = Workspace(workspace).manifest
    if not path.exists():
        return []
    try:
        return Manifest.read(path).tables
    except Exception as exc:  # a broken artifact must not stop the code location from loading
        log.warning("cannot read %s (%s): the warehouse is shown as one asset until a build rewrites it", path, exc)
        return []


def definition_stats(workspace: str | Path, tables: list[ManifestTable]) -> dict[str, TableStats]:
    """The installed tables' figures for the specs (the UI's *Columns* panel reads the definition,
    not the latest materialization): from the DuckDB warehouse in place, cached per file; none for
    PostgreSQL (not scanned at every load of the code location)."""
    from dia_assets.dagster.resources.warehouse import default_duckdb_path

    if not tables or not target_dialect(get_settings().warehouse).file_based:
        return {}
    return cached_stats(workspace, default_duckdb_path(str(workspace)), [t.name for t in tables])


def read_interpretation(workspace: str | Path) -> Interpretation | None:
    path = Workspace(workspace).interpretation
    try:
        return Interpretation.read(path) if path.exists() else None
    except Exception as exc:  # statistics are an aid; the schema still shows without them
        log.warning("cannot read %s (%s): column schemas carry no statistics", path, exc)
        return None


def column_schema(table: ManifestTable, stats: TableStats | None = None) -> TableSchema:
    """Columns with type, primary key, nullability, foreign-key target and the statistics of the
    installed table (`stats`, read after a build; the source file's profile would describe raw
    spellings and rows the build rejected or de-duplicated)."""
    refs = foreign_key_targets(table)
    pk = set(table.primary_key)
    cols = []
    for c in table.columns:
        other = (["primary key"] if c.name in pk else []) + ([f"references {refs[c.name]}"] if c.name in refs else [])
        figures = (f"in the table: {stats.describe(c.name)}" if stats is not None
                   else "table statistics: see the latest materialization")
        cols.append(TableColumn(
            name=c.name, type=c.type,
            description=f"from {table.source_ref}.{c.source_column}; {figures}",
            constraints=TableColumnConstraints(nullable=c.nullable and c.name not in pk,
                                               unique=table.primary_key == [c.name], other=other),
        ))
    constraints = ([f"PRIMARY KEY ({', '.join(table.primary_key)})"] if table.primary_key else []) + [
        f"FOREIGN KEY ({', '.join(fk.columns)}) REFERENCES {fk.ref_table} ({', '.join(fk.ref_columns)})"
        for fk in table.foreign_keys]
    return TableSchema(columns=cols, constraints=TableConstraints(other=constraints))


def column_lineage(table: ManifestTable) -> TableColumnLineage:
    """`dagster/column_lineage` back to the table's file (stored; shown only by Dagster+)."""
    return TableColumnLineage(deps_by_column={
        col: [TableColumnDep(asset_key=RAW_FILES, column_name=s) for s in sources]
        for col, sources in table_lineage(table).items() if sources
    })


def column_statistics(stats: TableStats) -> TableMetadataValue:
    """Per-column figures of the installed table, as a table the UI renders."""
    return MetadataValue.table(
        records=[TableRecord({"column": c.name, "type": c.type, "distinct": c.distinct, "nulls": c.nulls,
                              "min": c.min, "max": c.max}) for c in stats.columns.values()],
        schema=TableSchema(columns=[TableColumn("column"), TableColumn("type"), TableColumn("distinct", "int"),
                                    TableColumn("nulls", "int"), TableColumn("min"), TableColumn("max")]))


def table_metadata(table: ManifestTable, stats: TableStats | None = None) -> dict:
    """What a table asset shows: schema (with the installed table's statistics after a build),
    lineage as Markdown (readable in open-source Dagster), file."""
    figures = {"dagster/row_count": MetadataValue.int(stats.rows),
               "column_statistics": column_statistics(stats)} if stats is not None else {}
    return {
        **figures,
        "dagster/column_schema": column_schema(table, stats),
        "dagster/column_lineage": column_lineage(table),
        "column_lineage": MetadataValue.md(lineage_markdown(table)),
        "source_file": table.files_label(),
        "raw_files_partition": ", ".join(raw_partition(f.path) for f in table.files()),
        "primary_key": ", ".join(table.primary_key) or "none",
    }


def table_description(table: ManifestTable) -> str:
    keys = f"key ({', '.join(table.primary_key)})" if table.primary_key else "no primary key"
    refs = ", ".join(sorted({fk.ref_table for fk in table.foreign_keys}))
    return (f"Warehouse table `{table.name}`: the rows of {table.files_label()}, typed and "
            f"de-duplicated, {keys}" + (f", referencing {refs}" if refs else "") + ".")


def table_spec(table: ManifestTable, interp: Interpretation | None,  # noqa: ARG001 - figures come from the table
               stats: TableStats | None = None) -> AssetSpec:
    """The spec of one refined table: depends on the plan and on `raw_files` (every partition: one
    multi-asset cannot map `raw_files` differently per spec; `raw_files_partition` names the file,
    or the files of a table loaded from several)."""
    return AssetSpec(
        key=table_key(table.name), group_name=WAREHOUSE_GROUP, kinds={"duckdb", "table"},
        # not skippable: a warehouse step that gives a table no output fails the run instead of
        # skipping the checks, the report and the catalog after it in a green run
        description=table_description(table), skippable=False,
        deps=["schema_manifest", RAW_FILES],
        metadata=table_metadata(table, stats),
    )


def warehouse_placeholder_spec(description: str | None = None) -> AssetSpec:
    return AssetSpec(
        key=WAREHOUSE, group_name=WAREHOUSE_GROUP, kinds={"duckdb"}, deps=["schema_manifest"],
        description=description or "The warehouse, built and validated as a whole. After the first build "
        "(and a reload of the code location) each table is its own asset, warehouse/<table>.",
    )
