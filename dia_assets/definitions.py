"""The one Definitions object: assets, checks, jobs, sensors, schedules, resources."""

import warnings

from dagster import BetaWarning, Definitions

from dia_assets.analysis_assets import analysis_result
from dia_assets.catalog_assets import semantic_catalog
from dia_assets.interpretation_assets import interpretation_asset, raw_file_assets
from dia_assets.memory_assets import memory_lessons_asset
from dia_assets.query_assets import query_job, query_result_asset, question_partitions_sensor
from dia_assets.schema_assets import schema_assets, schema_checks
from resources import LLMResource, WorkspaceResource
from resources.embeddings import EmbeddingsResource
from resources.memory import MemoryResource
from resources.warehouse import duckdb_resource
from sensors import JOBS, SCHEDULES, SENSORS

warnings.filterwarnings("ignore", category=BetaWarning)  # observable_source_asset is beta in 1.13

raw_files = raw_file_assets()
embeddings = EmbeddingsResource()

defs = Definitions(
    assets=[
        *raw_files,
        interpretation_asset([r.key for r in raw_files]),
        *schema_assets,
        semantic_catalog,
        query_result_asset(),
        analysis_result,
        memory_lessons_asset(deps=["query_result"]),
    ],
    asset_checks=schema_checks,
    jobs=[*JOBS, query_job],
    sensors=[*SENSORS, question_partitions_sensor],
    schedules=SCHEDULES,
    resources={
        "workspace": WorkspaceResource(),
        "llm": LLMResource(),
        "duckdb": duckdb_resource(),
        "embeddings": embeddings,
        "memory": MemoryResource(embeddings=embeddings),
    },
)
