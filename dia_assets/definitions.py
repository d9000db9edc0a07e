"""The one Definitions object: assets, checks, resources, sensors."""

import warnings

from dagster import BetaWarning, Definitions

from dia_assets.interpretation_assets import interpretation_asset, raw_file_assets
from resources import LLMResource, WorkspaceResource

warnings.filterwarnings("ignore", category=BetaWarning)  # observable_source_asset is beta in 1.13

raw_files = raw_file_assets()

defs = Definitions(
    assets=[*raw_files, interpretation_asset([r.key for r in raw_files])],
    resources={"workspace": WorkspaceResource(), "llm": LLMResource()},
)
