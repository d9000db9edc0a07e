"""One `QueryAgent.answer` call's state lives in its `AnswerRun`, never on the agent, and the
agent's tools are `Tool` objects dispatched by name (issue #32)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dia_assets.agents.query import AgentSettings, QueryAgent, open_database, schema_index
from dia_assets.agents.query.loop import AnswerHooks, AnswerRun, query_tools
from dia_assets.agents.query.tools import AGENT_TOOLS, Tool, ToolOutput, refuse
from dia_assets.platform.model.litellm import litellm_chat
from tests.query_fixtures import (
    FAKE_MODEL,
    ROLE_CONTRACT,
    ROLE_Q,
    ROLE_SQL,
    build_example_warehouse,
    call,
    register_tools,
)

INNER_Q = "Staff headcount by role, please"


@pytest.fixture(scope="module")
def wh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_example_warehouse(tmp_path_factory.mktemp("wh") / "warehouse.duckdb")


def _agent(wh: Path, **kwargs: Any) -> QueryAgent:
    db = open_database(wh)
    return QueryAgent(db, schema_index(db), litellm_chat(FAKE_MODEL),
                      settings=AgentSettings(reflect=False, memory_refs=0), **kwargs)


def _tools_called(trace: dict[str, Any]) -> list[str]:
    return [e["name"] for e in trace["events"] if e["event"] == "tool"]


def test_an_answer_inside_another_answer_on_one_agent_shares_nothing(wh: Path) -> None:
    """The user's reply to the outer question's `ask` runs a whole second answer on the same
    agent. When the state lived on `self`, the inner call replaced the outer's events, usage
    and resubmission window: the outer trace then held the inner question and its identical
    SQL was refused as a resubmission."""
    inner: list[Any] = []

    def user(question: str) -> str:
        inner.append(agent.answer(INNER_Q, "inner"))
        return "Count each staff member once."

    register_tools([
        ROLE_CONTRACT, call("ask", question="Count each staff member once?"),  # outer
        ROLE_CONTRACT, call("submit", sql=ROLE_SQL),                             # inner, inside ask
        call("submit", sql=ROLE_SQL),                                            # outer again
    ])
    agent = _agent(wh, ask_user=user)
    outer = agent.answer(ROLE_Q, "outer")

    assert [r.result.status for r in (outer, *inner)] == ["answered", "answered"]
    assert outer.result.attempts == 1 and inner[0].result.attempts == 1
    assert _tools_called(outer.trace) == ["declare_contract", "ask", "submit"]
    assert _tools_called(inner[0].trace) == ["declare_contract", "submit"]
    starts = [e for e in outer.trace["events"] if e["event"] == "start"]
    assert [e["question"] for e in starts] == [ROLE_Q]
    assert INNER_Q not in str(outer.trace["events"])
    # each run counts its own model calls
    assert sum(e["event"] == "model_call" for e in outer.trace["events"]) == 3
    assert sum(e["event"] == "model_call" for e in inner[0].trace["events"]) == 2
    assert not [k for k in vars(agent) if k not in (
        "privacy", "catalog_link", "db", "index", "chat", "memory", "settings", "ask_user",
        "allow_writes", "tools", "_by_name", "hooks")]  # configuration only


def test_a_run_moved_to_another_database_leaves_the_agent_and_the_next_run_alone(wh: Path, tmp_path: Path) -> None:
    agent = _agent(wh)
    first = agent.start(ROLE_Q)
    other = open_database(build_example_warehouse(tmp_path / "other.duckdb"))
    first.use_database(other, schema_index(other))
    assert first.db is other and first.explorer.db is other and first.gate is not agent.start(ROLE_Q).gate
    second = agent.start(INNER_Q)
    assert agent.db is not other and second.db is agent.db and second.explorer.db is agent.db


def test_an_extra_tool_is_offered_and_dispatched_with_the_run(wh: Path) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def count_rows(run: AnswerRun, args: dict[str, Any]) -> ToolOutput:
        seen.append((run.question, args))
        if args.get("table") != "staff":
            return refuse({"error": "only staff"}, policy="demo")
        return ToolOutput({"rows": run.gate.rows("SELECT COUNT(*) FROM staff", 1, 5.0)[0][0]})

    opened: list[str] = []

    class Hooks(AnswerHooks):
        def opening(self, run: AnswerRun, messages: list[dict[str, Any]]) -> None:
            messages[0]["content"] += "\nUse count_rows."
            opened.append(run.question)

        def finished(self, run: AnswerRun, agent_run: Any) -> None:
            agent_run.trace["extra"] = run.question_id

    tool = Tool("count_rows", "Count rows (cap {max_rows}).", {"type": "object", "properties": {"table": {
        "type": "string"}}}, count_rows)
    fake = register_tools([ROLE_CONTRACT, call("count_rows", table="visits"), call("count_rows", table="staff"),
                           call("submit", sql=ROLE_SQL)])
    agent = _agent(wh, tools=[*query_tools(), tool], hooks=Hooks())
    run = agent.answer(ROLE_Q, "q1")

    assert run.result.status == "answered" and run.trace["extra"] == "q1" and opened == [ROLE_Q]
    sent = fake.requests[0]
    assert [t["function"]["name"] for t in sent["tools"]] == [*AGENT_TOOLS, "count_rows"]
    assert sent["tools"][-1]["function"]["description"] == "Count rows (cap 50)."
    assert sent["messages"][0]["content"].endswith("\nUse count_rows.")
    assert seen == [(ROLE_Q, {"table": "visits"}), (ROLE_Q, {"table": "staff"})]
    calls = [e for e in run.trace["events"] if e["event"] == "tool" and e["name"] == "count_rows"]
    assert calls[0]["refused"] and calls[0]["policy"] == "demo" and not calls[1]["refused"]
    assert '"rows": ' in calls[1]["result"]


def test_tools_are_dispatched_only_through_the_agents_list(wh: Path) -> None:
    """A tool left out of the list is unknown to the loop, even a built-in one."""
    without_probe = [t for t in query_tools() if t.name != "probe"]
    register_tools([ROLE_CONTRACT, call("probe", sql="SELECT 1"), call("submit", sql=ROLE_SQL)])
    run = _agent(wh, tools=without_probe).answer(ROLE_Q)
    probe = [e for e in run.trace["events"] if e["event"] == "tool" and e["name"] == "probe"]
    assert probe[0]["refused"] and "unknown tool 'probe'" in probe[0]["result"]
    with pytest.raises(ValueError, match="share a name"):
        _agent(wh, tools=[*query_tools(), query_tools()[0]])
