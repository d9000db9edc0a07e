"""The one Definitions object: assets, checks, jobs, sensors, schedules, resources."""

import warnings

from dagster import BetaWarning, Definitions

from dia_assets.interpretation_assets import interpretation_asset, raw_file_assets
from dia_assets.schema_assets import schema_assets, schema_checks
from resources import LLMResource, WorkspaceResource
from resources.warehouse import duckdb_resource
from sensors import build_job, new_data_sensor, nightly_refresh, review_gate_sensor, schema_job

warnings.filterwarnings("ignore", category=BetaWarning)  # observable_source_asset is beta in 1.13

raw_files = raw_file_assets()

defs = Definitions(
    assets=[*raw_files, interpretation_asset([r.key for r in raw_files]), *schema_assets],
    asset_checks=schema_checks,
    jobs=[build_job, schema_job],
    sensors=[new_data_sensor, review_gate_sensor],
    schedules=[nightly_refresh],
    resources={"workspace": WorkspaceResource(), "llm": LLMResource(), "duckdb": duckdb_resource()},
)
