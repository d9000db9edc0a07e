"""LLM access through litellm (DESIGN §7). Optional: with no model, callers skip LLM work."""

from __future__ import annotations

from typing import Any

from dagster import ConfigurableResource
from pydantic import Field

from dia_assets.platform.settings import get_settings


class LLMResource(ConfigurableResource):
    """Any litellm model (`DIA_MODEL`, e.g. `anthropic/claude-sonnet-4-5`), or none."""

    model: str | None = Field(default_factory=lambda: get_settings().model)
    temperature: float = 0.0
    timeout_s: float = 120.0

    @property
    def enabled(self) -> bool:
        return bool(self.model)

    def complete(self, messages: list[dict[str, Any]], **kwargs: Any) -> tuple[str, dict[str, Any]]:
        """Text of the first choice, plus usage: tokens, cost and latency for the trace."""
        if not self.model:
            raise RuntimeError("no model configured: set DIA_MODEL (for example openai/gpt-5)")
        from dia_assets.platform.model.litellm import complete_text

        text, usage = complete_text(self.model, messages, temperature=self.temperature, timeout=self.timeout_s,
                                    **kwargs)
        return text, usage.as_dict()
