"""The one Definitions object: assets, checks, jobs, sensors, schedules, resources.

The warehouse tables are assets read from the manifest the last build wrote (as dagster-dbt
reads `manifest.json`): reload the code location after a build that adds or drops a table."""

import warnings
from pathlib import Path

from dagster import (
    BetaWarning,
    Definitions,
    ExecutorDefinition,
    in_process_executor,
    multiprocess_executor,
)

from dia_assets.agents.schema_creator.lineage import remember_planned_lineage
from dia_assets.dagster.analysis import analysis_result_asset
from dia_assets.dagster.catalog import semantic_catalog
from dia_assets.dagster.interpretation import interpretation_asset, raw_file_assets
from dia_assets.dagster.lineage import lineage_report
from dia_assets.dagster.memory import memory_lessons_asset
from dia_assets.dagster.query import query_job, query_result_asset, question_partitions_sensor
from dia_assets.dagster.resources import LLMResource, WorkspaceResource
from dia_assets.dagster.resources.embeddings import EmbeddingsResource
from dia_assets.dagster.resources.memory import MemoryResource
from dia_assets.dagster.resources.warehouse import duckdb_resource
from dia_assets.dagster.resources.workspace import default_workspace
from dia_assets.dagster.schema import schema_definitions
from dia_assets.dagster.sensors import JOBS, SCHEDULES, SENSORS
from dia_assets.dagster.tables import (
    WAREHOUSE,
    definition_stats,
    manifest_tables,
    read_interpretation,
    table_key,
)
from dia_assets.platform.remote_workspace import pull
from dia_assets.platform.settings import get_settings

warnings.filterwarnings("ignore", category=BetaWarning)  # observable_source_asset is beta in 1.13


def run_executor() -> ExecutorDefinition:
    """One process per run by default (UI materializations and backfills too): the steps are
    short and a process per step costs a Python start and a definitions load each.
    DIA_EXECUTOR=multiprocess runs independent steps (checks, table readers) side by side,
    bounded per run by `execution.config.max_concurrent`. `module:attribute` names any other
    executor (dagster_k8s:k8s_job_executor, dagster_celery:celery_executor, ...): a deployment
    picks it by configuration, with no code edit (docs/production.md)."""
    name = get_settings().executor
    if name in ("in_process", "multiprocess"):
        return multiprocess_executor if name == "multiprocess" else in_process_executor
    return executor_named(name)


def executor_named(path: str) -> ExecutorDefinition:
    """The executor `module:attribute`; a clear error naming DIA_EXECUTOR when it is not one."""
    import importlib

    module, _, attribute = path.partition(":")
    try:
        found = getattr(importlib.import_module(module), attribute)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"DIA_EXECUTOR={path}: cannot load it ({type(err).__name__}: {err}); "
                         f"install the package that provides it in the code location's environment") from None
    if not isinstance(found, ExecutorDefinition):
        raise ValueError(f"DIA_EXECUTOR={path}: {type(found).__name__} is not a Dagster executor")
    return found


def build_defs(workspace: str | Path | None = None) -> Definitions:
    """The code location for the workspace (default DIA_WORKSPACE): one asset per table of its
    manifest, or a single `warehouse` asset before the first build. An s3:// workspace is read
    from this process's working copy, pulled here (a step's resource pulls it again: unchanged
    objects are not downloaded twice)."""
    root = pull(workspace or default_workspace())
    tables = manifest_tables(root)
    remember_planned_lineage(root, tables)  # the tables' column lineage as the plan derived it
    schema_assets, schema_checks = schema_definitions(tables, read_interpretation(root) if tables else None,
                                                      definition_stats(root, tables), get_settings().dbt_project)
    raw_files = raw_file_assets()
    embeddings = EmbeddingsResource()
    warehouse_keys = [table_key(t.name) for t in tables] or [WAREHOUSE]
    return Definitions(
        assets=[
            *raw_files,
            interpretation_asset([r.key for r in raw_files]),
            *schema_assets,
            semantic_catalog,
            query_result_asset(deps=warehouse_keys),
            analysis_result_asset(deps=warehouse_keys),
            memory_lessons_asset(deps=["query_result"]),
            lineage_report,
        ],
        asset_checks=schema_checks,
        jobs=[*JOBS, query_job],
        sensors=[*SENSORS, question_partitions_sensor],
        schedules=SCHEDULES,
        executor=run_executor(),
        resources={
            "workspace": WorkspaceResource(),
            "llm": LLMResource(),
            "duckdb": duckdb_resource(),
            "embeddings": embeddings,
            "memory": MemoryResource(embeddings=embeddings),
        },
    )


defs = build_defs()
