"""Dagster resources: thin, configurable handles on the outside world."""

from resources.llm import LLMResource
from resources.workspace import WorkspaceResource

__all__ = ["LLMResource", "WorkspaceResource"]
