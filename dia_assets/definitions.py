"""The one Definitions object: assets, checks, jobs, sensors, schedules, resources."""

import warnings

from dagster import BetaWarning, Definitions

from dia_assets.interpretation_assets import interpretation_asset, raw_file_assets
from dia_assets.memory_assets import memory_lessons
from dia_assets.schema_assets import schema_assets, schema_checks
from resources import LLMResource, WorkspaceResource
from resources.embeddings import EmbeddingsResource
from resources.memory import MemoryResource
from resources.warehouse import duckdb_resource
from sensors import (
    build_job,
    memory_job,
    new_data_sensor,
    nightly_refresh,
    review_gate_sensor,
    schema_job,
    weekly_memory,
)

warnings.filterwarnings("ignore", category=BetaWarning)  # observable_source_asset is beta in 1.13

raw_files = raw_file_assets()
embeddings = EmbeddingsResource()

defs = Definitions(
    assets=[*raw_files, interpretation_asset([r.key for r in raw_files]), *schema_assets, memory_lessons],
    asset_checks=schema_checks,
    jobs=[build_job, schema_job, memory_job],
    sensors=[new_data_sensor, review_gate_sensor],
    schedules=[nightly_refresh, weekly_memory],
    resources={
        "workspace": WorkspaceResource(),
        "llm": LLMResource(),
        "duckdb": duckdb_resource(),
        "embeddings": embeddings,
        "memory": MemoryResource(embeddings=embeddings),
    },
)
