"""Dagster resources: thin, configurable handles on the outside world."""

from dia_assets.resources.llm import LLMResource
from dia_assets.resources.workspace import WorkspaceResource

__all__ = ["LLMResource", "WorkspaceResource"]
