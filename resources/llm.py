"""LLM access through litellm (DESIGN §7). Optional: with no model, callers skip LLM work."""

from __future__ import annotations

import time
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
        from dia_assets.agents.models.door import _litellm, completion

        litellm = _litellm()
        started = time.perf_counter()

        response = completion(
            model=self.model, messages=messages, temperature=self.temperature,
            timeout=self.timeout_s, **kwargs,
        )
        usage = getattr(response, "usage", None)
        try:
            cost = float(litellm.completion_cost(completion_response=response))
        except Exception:  # unknown models have no price
            cost = 0.0
        return response.choices[0].message.content or "", {
            "model": self.model,
            "prompt_tokens": getattr(usage, "prompt_tokens", 0) or 0,
            "completion_tokens": getattr(usage, "completion_tokens", 0) or 0,
            "cost_usd": cost,
            "latency_s": round(time.perf_counter() - started, 3),
        }
