"""Dagster resources: thin, configurable handles on the outside world."""

from dia_assets.dagster.resources.llm import LLMResource
from dia_assets.dagster.resources.workspace import WorkspaceResource

__all__ = ["LLMResource", "WorkspaceResource"]
