"""Jobs the sensors and schedules request. Re-answering questions uses the Query
Generator's own partitioned `query_job`."""

from dagster import AssetSelection, define_asset_job

from dia_assets.dagster.query import query_job as replan_job  # one partition per question
from dia_assets.dagster.tables import WAREHOUSE_GROUP

__all__ = ["build_job", "catalog_job", "memory_job", "plan_job", "quality_check_job", "replan_job", "schema_job"]

# The warehouse is one asset per table (or one `warehouse` before the first build): its group.
WAREHOUSE = AssetSelection.groups(WAREHOUSE_GROUP)
BUILD = AssetSelection.assets("interpretation", "schema_manifest", "validation_report") | WAREHOUSE
SCHEMA = AssetSelection.assets("schema_manifest", "validation_report") | WAREHOUSE
# Data Agents Table II, "data sources updated -> refresh semantic catalogs": the `catalog`
# group (semantic_catalog) follows every new validation report through its eager automation
# condition (the automation sensor is on by default), in a run of its own: a build succeeds
# when its warehouse is validated, as `dia build` does, not a minute later once the catalog
# is embedded (issue 31, bench/ui.py). Selected by group so that code locations without it
# (tests of the build alone) still resolve catalog_job.
CATALOG = AssetSelection.groups("catalog")
# Runs that write or check the workspace's manifest and warehouse carry this tag; the
# instance's dagster.yaml (Makefile) limits it to one run at a time, so a schema_job started
# by an override edit cannot check a warehouse that a concurrent build_job is replacing.
SERIAL = {"dia/workspace": "writer"}

# The executor is the code location's (definitions.run_executor: one process per run unless
# DIA_EXECUTOR=multiprocess).
build_job = define_asset_job(
    "build_job", selection=BUILD, tags=SERIAL,
    description="Interpret the raw files and rebuild the validated warehouse (what `dia build` does); the "
    "semantic catalog follows in its own run (automation).",
)
schema_job = define_asset_job(
    "schema_job", selection=SCHEMA, tags=SERIAL,
    description="Re-plan the schema from the current interpretation and overrides, reload, validate; the "
    "semantic catalog follows in its own run (automation).",
)
plan_job = define_asset_job(
    "plan_job", selection=AssetSelection.assets("interpretation", "schema_manifest"), tags=SERIAL,
    description="Interpret the raw files and plan the schema, without loading: the manifest lists the tables "
    "(reload the code location to see each as an asset).",
)
quality_check_job = define_asset_job(
    "quality_check_job", selection=WAREHOUSE - WAREHOUSE.without_checks(), tags=SERIAL,
    description="Re-run the warehouse checks (row counts, coverage, keys, rejects, test queries) after drift; "
    "tag dia/tables names the tables the drift touched.",
)
catalog_job = define_asset_job(
    "catalog_job", selection=CATALOG,
    description="Rebuild the semantic catalog (labels and embeddings in the shared memory) for the current "
    "warehouse; the automation sensor does it after every new validation report, `dia demo` after its build.",
)
memory_job = define_asset_job(
    "memory_job", selection=AssetSelection.assets("memory_lessons"),
    description="Consolidate, promote and forget memory lessons.",
)
