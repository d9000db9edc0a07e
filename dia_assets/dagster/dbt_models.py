"""The refined tables built by a dbt project through dagster-dbt (`DIA_DBT_PROJECT`, issue 34):
one asset per model, keyed `warehouse/<table>` (`dbt_project.table_path`), the project's tests as
asset checks. The project, its manifest and the install live in `agents/schema_creator/dbt_project.py`."""


from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    Failure,
    MetadataValue,
)
from dagster_dbt import (
    DagsterDbtTranslator,
    DagsterDbtTranslatorSettings,
    DbtCliResource,
    dbt_assets,
)
from dagster_duckdb import DuckDBResource

from dia_assets.agents.schema_creator import dbt_project as dp
from dia_assets.agents.schema_creator.writer import writing
from dia_assets.contracts.manifest import ManifestTable
from dia_assets.dagster.resources.warehouse import warehouse_target
from dia_assets.dagster.resources.workspace import WorkspaceResource
from dia_assets.dagster.tables import WAREHOUSE_GROUP
from dia_assets.platform.settings import get_settings
from dia_assets.platform.warehouse.base import target_dialect


class DiaTranslator(DagsterDbtTranslator):
    """DIA's keys for dbt's nodes; every model in the warehouse group (the build and quality jobs select it)."""

    def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> AssetKey:
        return AssetKey(dp.table_path(dict(dbt_resource_props)))

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:  # noqa: ARG002
        return WAREHOUSE_GROUP


def dbt_table_assets(project: str | Path, tables: Sequence[ManifestTable]) -> AssetsDefinition:
    """The project's models as one dagster-dbt multi-asset whose run builds on a copy of the
    warehouse and installs it only when `dbt build` succeeded (tests included)."""
    root = dp.locate(project)
    manifest = dp.prepare_manifest(root)
    translator = DiaTranslator(settings=DagsterDbtTranslatorSettings(enable_duplicate_source_asset_keys=True))

    @dbt_assets(manifest=manifest, dagster_dbt_translator=translator, name="dbt_warehouse")
    def _dbt(context: AssetExecutionContext, workspace: WorkspaceResource, duckdb: DuckDBResource) -> Iterator[Any]:
        target = warehouse_target(duckdb)
        # the workspace's one writer: no DIA build replaces the warehouse between the copy and the install
        with writing(workspace.root_path, f"dagster run {context.run_id[:8]} (dbt build)", "dbt", target,
                     record=False, wait_s=get_settings().writer_wait_s, say=context.log.warning):
            yield from _build_and_install(context, root, target, workspace, tables)

    return _dbt


def _build_and_install(context: AssetExecutionContext, root: Path, target: str, workspace: WorkspaceResource,
                       tables: Sequence[ManifestTable]) -> Iterator[Any]:
    dialect = target_dialect(target)
    if not dialect.file_based:  # the install swaps in a built copy of a DuckDB file
        raise Failure(description=f"DIA_DBT_PROJECT builds DuckDB warehouses only; {dialect.redacted_target or target} "
                      f"is {dialect.title or dialect.name}: run `dbt build` on its `dia dbt export` instead (docs/dbt.md)")
    scratch = dp.scratch_build(root, dialect.local_path(target), workspace.tree.dbt_build)
    dbt = DbtCliResource(project_dir=str(root), profiles_dir=str(scratch.profiles_dir),
                         dbt_executable=dp.dbt_executable())
    invocation = dbt.cli(["build"], context=context, raise_on_error=False, target_path=scratch.target_path)
    events = list(invocation.stream())
    if not invocation.is_successful():
        yield from (e for e in events if isinstance(e, AssetCheckResult))  # which tests failed, recorded
        kept = dp.keep_rejected(scratch)
        raise Failure(description=f"dbt build of {root} failed, so nothing was installed: the warehouse is "
                      f"as it was; dbt's build is kept at {kept}",
                      metadata={"dbt_build": MetadataValue.path(str(kept))})
    changed = dp.install(scratch, dp.built_models(invocation.get_artifact("manifest.json"),
                                                  invocation.get_artifact("run_results.json")), list(tables))
    context.log.info(f"installed from dbt: {', '.join(changed)}")
    yield from events
