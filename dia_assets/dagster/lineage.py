"""The `lineage_report` asset: which answers read which tables and columns, and the files,
parses and row ranges behind each table (agents/lineage), as Markdown tables in its metadata
and as `lineage/lineage.json` + `lineage/report.md`."""

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset
from dagster_duckdb import DuckDBResource

from dia_assets.contracts.artifact import write_atomic
from dia_assets.dagster.resources.warehouse import warehouse_target
from dia_assets.dagster.resources.workspace import WorkspaceResource


@asset(deps=["validation_report", "query_result"], group_name="lineage", kinds={"python"},
       description="Lineage audit: answers -> warehouse columns -> files (row ranges, parse).")
def lineage_report(context: AssetExecutionContext, workspace: WorkspaceResource,
                   duckdb: DuckDBResource) -> MaterializeResult:
    # imported here: the lineage contracts and readers are seconds that every run worker
    # (a build too) would pay when it loads the code location
    from dia_assets.agents.lineage import render
    from dia_assets.agents.lineage.index import build_index

    index = build_index(workspace.root_path, warehouse_target(duckdb))
    json_path = index.write(workspace.tree.lineage_index)
    md_path = workspace.tree.lineage_report
    write_atomic(md_path, render.index_report(index))
    context.log.info(f"lineage of {len(index.tables)} table(s) and {len(index.answers)} answer(s)")
    metadata: dict[str, object] = {
        "tables": len(index.tables),
        "answers": len(index.answers),
        "tables_and_files": MetadataValue.md(render.tables_table(index)),
        "answers_and_reads": MetadataValue.md(render.answers_table(index.answers)),
        "path/lineage": MetadataValue.path(str(json_path)),
        "path/report": MetadataValue.path(str(md_path)),
    }
    for origin in index.tables:
        metadata[f"columns/{origin.table}"] = MetadataValue.md(render.columns_table(index, origin))
    return MaterializeResult(metadata=metadata)
