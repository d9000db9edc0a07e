"""`semantic_catalog`: the label tree over the warehouse (Data Agents §III-A), refreshed
after every build (Table II, "data sources updated -> refresh semantic catalogs"): its eager
automation condition runs it after each new validation report, in a run of its own, so a
build succeeds once its warehouse is validated (as `dia build`) and is not held up by the
embeddings (issue 31).

The catalog is an aid: when the shared memory is down, the warehouse a build just made is
still good, so the run does not fail here. The asset records `refreshed: false` with the
reason, and its non-blocking `catalog_refreshed` check fails (WARN) until a refresh works."""


from typing import TYPE_CHECKING

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    MaterializeResult,
    MetadataValue,
    asset,
)
from dagster_duckdb import DuckDBResource

from dia_assets.dagster.eager import eager_after_each_input
from dia_assets.dagster.resources.memory import MemoryResource
from dia_assets.dagster.resources.warehouse import warehouse_target
from dia_assets.dagster.resources.workspace import WorkspaceResource
from dia_assets.platform.settings import get_settings

# The catalog builder (semantic operators, scipy) and psycopg are imported when the step runs:
# every run worker loads the code location.
if TYPE_CHECKING:
    from dia_assets.contracts.semantic_catalog import SemanticCatalog


def _tree_md(catalog: "SemanticCatalog") -> str:
    lines = []
    for domain in (n for n in catalog.nodes if n.level == "domain"):
        lines.append(f"- **{domain.label}**")
        for entity in catalog.children(domain.id):
            cols = ", ".join(a.label for a in catalog.children(entity.id))
            lines.append(f"  - {entity.label} ({entity.row_count or 0} rows): {cols}")
    return "\n".join(lines)


REFRESHED = AssetCheckSpec("catalog_refreshed", asset="semantic_catalog", blocking=False, description=(
    "The catalog was rebuilt and stored in the shared memory for the current warehouse; fails (WARN) "
    "when the memory was unreachable, so schema linking and estimates ran without it."))


def memory_down() -> tuple[type[BaseException], ...]:
    """The memory is down or dropped the connection mid-refresh: record it, do not fail the build."""
    import psycopg

    from dia_assets.platform.memory.connection import MemoryStoreUnavailable

    return (MemoryStoreUnavailable, psycopg.OperationalError, psycopg.InterfaceError)


@asset(deps=["validation_report"], group_name="catalog", kinds={"python", "postgres"}, check_specs=[REFRESHED],
       automation_condition=eager_after_each_input(),
       description="A searchable tree of labels over the warehouse (domain -> table -> column), kept with "
       "embeddings in the shared PostgreSQL + pgvector memory; search it with `dia catalog search`. "
       "Refreshed after every new validation report (an eager automation condition that keeps a report "
       "stored after the catalog was asked for pending, dia_assets/dagster/eager.py: the `dia_automation` "
       "sensor, on by default, launches it). When the memory is down the run still succeeds: `refreshed` is false and the `catalog_refreshed` "
       "check fails.")
def semantic_catalog(context: AssetExecutionContext, workspace: WorkspaceResource,
                     memory: MemoryResource, duckdb: DuckDBResource) -> MaterializeResult:
    from dia_assets.agents.catalog.refresh import catalog_path, model_namer, refresh_catalog

    try:
        store = memory.store()
        catalog = refresh_catalog(workspace.root_path, warehouse_target(duckdb), store,
                                  model_namer(get_settings().model))
    except memory_down() as err:
        reason = (f"shared memory unavailable ({type(err).__name__}: {err})"[:500]
                  + "; the warehouse is built, but questions on it link the schema and estimate semantic "
                  "filters without the catalog until semantic_catalog is materialized again "
                  "(or `dia catalog build`)")
        context.log.warning(f"semantic catalog not refreshed: {reason}")
        return MaterializeResult(
            metadata={"refreshed": False, "error": reason},
            check_results=[AssetCheckResult(passed=False, severity=AssetCheckSeverity.WARN,
                                            description=f"not refreshed: {reason}"[:2000])])
    counts = catalog.counts()
    context.log.info(f"semantic catalog {catalog.scope}: {counts}")
    return MaterializeResult(metadata={
        "refreshed": True,
        "scope": catalog.scope,
        "domains": counts["domain"], "tables": counts["entity"], "columns": counts["attribute"],
        "domain_naming": catalog.domain_naming,
        "tree": MetadataValue.md(_tree_md(catalog)),
        "path": MetadataValue.path(str(catalog_path(workspace.root_path))),
        "store": store.describe(),
        "dagster/row_count": len(catalog.nodes),
    }, check_results=[AssetCheckResult(passed=True, severity=AssetCheckSeverity.WARN,
                                       description=f"{len(catalog.nodes)} nodes for {catalog.scope}")])
