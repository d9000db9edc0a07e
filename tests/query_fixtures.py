"""Helpers for the Query Generator tests: the example warehouses (built by
`dia_assets.agents.evaluation.example_warehouses`) and a scripted tool-calling model
(`platform.model.scripted.ScriptedModel`) registered with litellm as provider `fake`.

A script is a list of steps, one per model call: `call("probe", sql=...)`, several calls
in one reply via `calls(call(...), call(...))`, plain text via `say("...")`, or a callable
`(messages) -> step` that looks at the conversation so far.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from dia_assets.agents.evaluation.example_warehouses import (  # noqa: F401 - the tests' names
    DATA,
    build_example_warehouse,
    build_sqlite,
    build_tiny_duckdb,
    generated_schema,
    tiny_warehouse_sql,
)
from dia_assets.platform.model.litellm import register_price, register_scripted
from dia_assets.platform.model.scripted import (  # noqa: F401 - the tests' names
    FAKE_MODEL,
    PRICE_IN,
    PRICE_OUT,
    ScriptedModel,
    Step,
    call,
    calls,
    say,
)

ROOT = Path(__file__).resolve().parents[1]


# the staff-per-role question, answered the same way by several agent tests
ROLE_Q = "How many staff members do we have in each role?"
ROLE_SQL = "SELECT role, COUNT(*) AS staff_count FROM staff GROUP BY role ORDER BY staff_count DESC"
ROLE_CONTRACT = call(
    "declare_contract", kind="analytical", columns=["role", "staff_count"],
    granularity={"description": "role", "key_columns": ["role"]},
    order=[{"column": "staff_count", "direction": "desc"}], filters=[],
)

def register_tools(steps: list[Step]) -> ScriptedModel:
    """`steps` served as `fake/*` through the model door; `.requests` records each request."""
    return register_scripted(ScriptedModel(steps))


# priced per token in litellm's cost map, so the door's pricing works for the fake model
register_price(FAKE_MODEL, PRICE_IN, PRICE_OUT, provider="fake")


def last_tool_result(messages: list[dict[str, Any]]) -> str:
    for m in reversed(messages):
        if m.get("role") == "tool":
            return str(m.get("content"))
    return ""


def tool_results(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m.get("content")) for m in messages if m.get("role") == "tool"]


def strip_ws(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
