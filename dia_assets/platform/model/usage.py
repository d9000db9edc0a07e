"""The one usage record of a model call: tokens, cost and latency, built from a response in
one place (`litellm.usage_of`) and priced by one function (`litellm.price`), so the query
agent, charts, the semantic operators and the LLM resource report the same figures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Usage:
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0

    @classmethod
    def of(cls, response: Any, model: str, cost_usd: float, latency_s: float) -> Usage:
        """From a completion response's `usage` (absent counts are 0); latency in 0.1 ms."""
        usage = getattr(response, "usage", None)
        return cls(model=model,
                   prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                   completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
                   cost_usd=cost_usd, latency_s=round(latency_s, 4))

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def as_dict(self) -> dict[str, Any]:
        """The record as traces and results store it."""
        return {"model": self.model, "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens, "cost_usd": self.cost_usd,
                "latency_s": self.latency_s}
