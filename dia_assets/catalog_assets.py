"""`semantic_catalog`: the label tree over the warehouse (Data Agents §III-A), refreshed
after every build (it is in the jobs the data sensors request: Table II, "data sources
updated -> refresh semantic catalogs")."""


import os

from dagster import AssetExecutionContext, MaterializeResult, MetadataValue, asset
from dagster_duckdb import DuckDBResource

from dia_assets.agents.catalog.refresh import catalog_path, model_namer, refresh_catalog
from dia_assets.contracts.semantic_catalog import SemanticCatalog
from resources.memory import MemoryResource
from resources.warehouse import warehouse_target
from resources.workspace import WorkspaceResource


def _tree_md(catalog: SemanticCatalog) -> str:
    lines = []
    for domain in (n for n in catalog.nodes if n.level == "domain"):
        lines.append(f"- **{domain.label}**")
        for entity in catalog.children(domain.id):
            cols = ", ".join(a.label for a in catalog.children(entity.id))
            lines.append(f"  - {entity.label} ({entity.row_count or 0} rows): {cols}")
    return "\n".join(lines)


@asset(deps=["validation_report"], group_name="catalog", kinds={"python", "postgres"},
       description="A searchable tree of labels over the warehouse (domain -> table -> column), kept with "
       "embeddings in the shared PostgreSQL + pgvector memory; search it with `dia catalog search`.")
def semantic_catalog(context: AssetExecutionContext, workspace: WorkspaceResource,
                     memory: MemoryResource, duckdb: DuckDBResource) -> MaterializeResult:
    store = memory.store()
    catalog = refresh_catalog(workspace.root_path, warehouse_target(duckdb), store,
                              model_namer(os.environ.get("DIA_MODEL")))
    counts = catalog.counts()
    context.log.info(f"semantic catalog {catalog.scope}: {counts}")
    return MaterializeResult(metadata={
        "scope": catalog.scope,
        "domains": counts["domain"], "tables": counts["entity"], "columns": counts["attribute"],
        "domain_naming": catalog.domain_naming,
        "tree": MetadataValue.md(_tree_md(catalog)),
        "path": MetadataValue.path(str(catalog_path(workspace.root_path))),
        "store": store.describe(),
        "dagster/row_count": len(catalog.nodes),
    })
