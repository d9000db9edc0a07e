"""The oracle provider and the AgentSolver adapter: scripted turns, the agent on SQLite, and how
a QueryResult becomes a Prediction."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from dia_assets.agents.evaluation.datasets import load_instances
from dia_assets.agents.evaluation.oracle import REGISTRY, OracleAnswer, next_step, not_null_columns
from dia_assets.agents.evaluation.runner import run_eval
from dia_assets.agents.evaluation.solvers import AgentSolver, last_submitted_sql, to_prediction
from tests.eval_fixtures import write_bird


def _call(name: str) -> dict:
    return {"id": "c", "type": "function", "function": {"name": name, "arguments": "{}"}}


def test_oracle_turns() -> None:
    answer = OracleAnswer(sql="SELECT 1 AS one", columns=["one"], not_null_columns=["gpa"])
    REGISTRY.put("How many ones are there?", answer)
    try:
        user = {"role": "user", "content": "Question: How many ones are there?\nSchema: ..."}
        first = next_step([user], ["declare_contract", "submit"])
        assert first == {"name": "declare_contract", "arguments": answer.contract()}
        assert first["arguments"]["filters"][0]["column"] == "gpa"
        after_contract = [user, {"role": "assistant", "tool_calls": [_call("declare_contract")]}]
        assert next_step(after_contract, ["submit"])["arguments"]["sql"] == "SELECT 1 AS one"  # type: ignore[index]
        refused = [*after_contract, {"role": "assistant", "tool_calls": [_call("submit")]}]
        assert "giving up" in next_step(refused, ["submit"])  # type: ignore[operator]
        assert next_step([user], ["write_lesson"]) == "no lesson"  # reflection turn
        assert "no gold answer" in next_step([{"role": "user", "content": "other"}], ["submit"])  # type: ignore[operator]
    finally:
        REGISTRY.drop("How many ones are there?")


def test_not_null_columns_become_declared_filters() -> None:
    sql = "SELECT name FROM s WHERE gpa IS NOT NULL AND NOT city IS NULL AND x IS NULL"
    assert not_null_columns(sql, "sqlite") == ["city", "gpa"]


def test_oracle_through_the_agent_on_sqlite_bird(tmp_path: Path) -> None:
    path = write_bird(tmp_path / "bird")
    summary = run_eval(load_instances(path), tmp_path / "bird" / "dev_databases", AgentSolver("oracle"),
                       tmp_path / "out", workers=2, ves_iterations=0)
    assert summary["ex"] == 100.0, summary
    assert summary["status_counts"] == {"answered": 3}


def _result(status: str, sql: str | None) -> SimpleNamespace:
    tokens = SimpleNamespace(prompt_tokens=100, completion_tokens=20, total_tokens=120, cost_usd=0.002,
                             model_calls=3, model="m")
    return SimpleNamespace(status=status, sql=sql, attempts=2, tokens=tokens, latency_s=1.5, message="gave up")


def test_query_result_to_prediction() -> None:
    trace = {"events": [
        {"event": "tool", "name": "submit", "arguments": json.dumps({"sql": "SELECT 1"})},
        {"event": "tool", "name": "probe", "arguments": json.dumps({"sql": "SELECT 2"})},
        {"event": "tool", "name": "submit", "arguments": json.dumps({"sql": "SELECT 3"})},
    ]}
    assert last_submitted_sql(trace) == "SELECT 3"
    ok = to_prediction(_result("answered", "SELECT 9"), None)
    assert (ok.sql, ok.sql_source, ok.tokens, ok.cost_usd, ok.attempts, ok.error) == ("SELECT 9", "accepted", 120, 0.002, 2, None)
    failed = to_prediction(_result("failed", None), SimpleNamespace(trace=trace))
    assert (failed.sql, failed.sql_source, failed.error) == (None, "none", "gave up")
    rescued = to_prediction(_result("failed", None), SimpleNamespace(trace=trace), score_unverified=True)
    assert (rescued.sql, rescued.sql_source) == ("SELECT 3", "last_attempt")


def test_agent_solver_passes_memory_to_the_agent(tmp_path: Path) -> None:
    from dia_assets.agents.query.memory import InMemoryMemory

    path = write_bird(tmp_path / "bird")
    memories: list[InMemoryMemory] = []

    def memory(db: object) -> InMemoryMemory:
        memories.append(InMemoryMemory())
        return memories[-1]

    summary = run_eval(load_instances(path)[:1], tmp_path / "bird" / "dev_databases",
                       AgentSolver("oracle", memory=memory), tmp_path / "out", ves_iterations=0)
    assert summary["ex"] == 100.0 and len(memories) == 1
