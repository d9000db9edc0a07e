"""Jobs the sensors and schedules request. Selections name asset keys, so this module
needs no asset imports."""

from dagster import AssetSelection, define_asset_job

BUILD = ["interpretation", "schema_manifest", "warehouse", "validation_report"]
SCHEMA = ["schema_manifest", "warehouse", "validation_report"]

build_job = define_asset_job(
    "build_job", selection=AssetSelection.assets(*BUILD),
    description="Interpret the raw files and rebuild the validated warehouse.",
)
schema_job = define_asset_job(
    "schema_job", selection=AssetSelection.assets(*SCHEMA),
    description="Re-plan the schema from the current interpretation and overrides, reload, validate.",
)
replan_job = define_asset_job(
    "replan_job", selection=AssetSelection.assets("query_result"),
    description="Re-answer the selected questions (one partition per question).",
)
memory_job = define_asset_job(
    "memory_job", selection=AssetSelection.assets("memory_lessons"),
    description="Consolidate, promote and forget memory lessons.",
)
