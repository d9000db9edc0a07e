"""Jobs the sensors and schedules request. Re-answering questions uses the Query
Generator's own partitioned `query_job`."""

from dagster import AssetSelection, define_asset_job

from dia_assets.query_assets import query_job as replan_job  # one partition per question

__all__ = ["build_job", "memory_job", "quality_check_job", "replan_job", "schema_job"]

BUILD = ["interpretation", "schema_manifest", "warehouse", "validation_report"]
SCHEMA = ["schema_manifest", "warehouse", "validation_report"]
# Data Agents Table II, "data sources updated -> refresh semantic catalogs": the `catalog`
# group (semantic_catalog) follows every build; selected by group so that code locations
# without it (tests of the build alone) still resolve these jobs
CATALOG = AssetSelection.groups("catalog")
# Runs that write or check the workspace's manifest and warehouse carry this tag; the
# instance's dagster.yaml (Makefile) limits it to one run at a time, so a schema_job started
# by an override edit cannot check a warehouse that a concurrent build_job is replacing.
SERIAL = {"dia/workspace": "writer"}

build_job = define_asset_job(
    "build_job", selection=AssetSelection.assets(*BUILD) | CATALOG, tags=SERIAL,
    description="Interpret the raw files and rebuild the validated warehouse.",
)
schema_job = define_asset_job(
    "schema_job", selection=AssetSelection.assets(*SCHEMA) | CATALOG, tags=SERIAL,
    description="Re-plan the schema from the current interpretation and overrides, reload, validate.",
)
quality_check_job = define_asset_job(
    "quality_check_job", selection=AssetSelection.checks_for_assets("warehouse"), tags=SERIAL,
    description="Re-run the warehouse checks (row counts, coverage, keys, rejects, test queries) after drift; "
    "tag dia/tables names the tables the drift touched.",
)
memory_job = define_asset_job(
    "memory_job", selection=AssetSelection.assets("memory_lessons"),
    description="Consolidate, promote and forget memory lessons.",
)
