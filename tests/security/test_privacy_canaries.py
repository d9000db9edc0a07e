"""Privacy modes end to end (issue 27, item 2 and 3): a folder whose every value is a canary
(tests/security/canaries.py) is built by the Schema Creator; then, in each DIA_PRIVACY mode,
every model request (the scripted litellm provider records them) and every MCP response
(tools, resources and errors) is searched for any canary.

The runs drive the error paths on purpose: casts that fail on canary text, dates and
numbers, an integer overflow, malformed JSON, a duplicate key in a modification, a failing
pipeline step, memory probes that fail, a failing submission.

What each mode allows (agents/query/gate.py):
- `schema-only`: names, types and counts. No canary anywhere.
- `aggregates`: also aggregate statistics computed over the data (SUM, AVG, ...), never a
  raw value: no canary anywhere, and an AVG does reach the model.
- `samples` (the control): values travel, so the same scan finds canaries.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError

from dia_assets.agents.query import AgentSettings, InMemoryMemory, answer_question
from dia_assets.agents.query.memory import Item
from dia_assets.platform.model.litellm import litellm_chat
from tests.memory_fixtures import HashEmbedder, db_url, pg_server  # noqa: F401 - pytest fixtures
from tests.query_fixtures import FAKE_MODEL, call, register_tools
from tests.security.canaries import found, write_folder

MODES = ["schema-only", "aggregates"]
# statements whose execution fails on canary values: the engine's message would quote them
FAILING = {
    "text_to_int": "SELECT COUNT(*) AS n FROM people WHERE CAST(full_name AS INTEGER) > 0",
    "key_to_int": "SELECT COUNT(*) AS n FROM people WHERE CAST(badge AS INTEGER) > 0",
    "text_to_date": "SELECT COUNT(*) AS n FROM visits WHERE CAST(reason AS DATE) IS NULL",
    "date_text_to_int": "SELECT COUNT(*) AS n FROM people WHERE CAST(CAST(hired_on AS VARCHAR) AS INTEGER) > 0",
    "overflow": "SELECT COUNT(*) AS n FROM people WHERE employee_no * employee_no > 0",
    "email_to_double": "SELECT COUNT(*) AS n FROM people WHERE CAST(email AS DOUBLE) > 0",
    "json": "SELECT COUNT(*) AS n FROM visits WHERE json_extract(reason, '$.a') IS NULL",
    "amount_to_tinyint": "SELECT COUNT(*) AS n FROM visits WHERE CAST(amount AS TINYINT) > 0",
}
ROWS = "SELECT badge, full_name, hired_on, hourly_rate FROM people"
AVERAGE = "SELECT AVG(hourly_rate) AS a FROM people"
CONTRACT = call("declare_contract", kind="analytical", columns=["role", "n"],
                granularity={"description": "role", "key_columns": ["role"]})
BAD_PROBE = "SELECT COUNT(*) > 0 FROM people WHERE CAST(full_name AS INTEGER) > 0"


@pytest.fixture(scope="module")
def canary(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    from dia_assets.pipeline import run

    base = tmp_path_factory.mktemp("canary")
    raw = write_folder(base / "raw")
    ws = base / "ws"
    result = run(raw, ws)
    assert result.report.accepted
    return {"raw": raw, "ws": ws, "warehouse": ws / "warehouse.duckdb"}


def _agent_steps() -> list[Any]:
    return [
        CONTRACT,
        call("probe", sql=ROWS),
        call("probe", sql=AVERAGE),
        *[call("probe", sql=sql) for sql in FAILING.values()],
        call("describe_table", name="people"),
        call("describe_table", name="visits"),
        call("search_schema", term="role"),
        call("read_memory", id="m1"),
        call("submit", sql="SELECT role, CAST(full_name AS INTEGER) AS n FROM people"),
        call("submit", sql="SELECT role, COUNT(*) AS n FROM people GROUP BY role"),
        call("write_lesson", kind="aggregation", title="people per role", rule="Group people by role.",
             probe_sql=BAD_PROBE),
        "no chart",  # the chart model's turn
    ]


def _memory() -> InMemoryMemory:
    return InMemoryMemory([Item("m1", "people counting rule", "Count people by badge.", BAD_PROBE)])


def _sent(handler: Any) -> str:
    return json.dumps(handler.requests, ensure_ascii=False, default=str)


def _query_agent(canary: dict[str, Path], mode: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any]:
    from dia_assets.agents.charts.choose import litellm_chart_model

    monkeypatch.setenv("DIA_PRIVACY", mode)
    handler = register_tools(_agent_steps())
    result, run = answer_question("How many people per role?", canary["warehouse"], chat=litellm_chat(FAKE_MODEL),
                                  memory=_memory(), workspace=canary["ws"], question_id=f"roles_{mode}",
                                  settings=AgentSettings(timeout_s=10, max_attempts=4),
                                  chart_model=litellm_chart_model(FAKE_MODEL))
    assert result.status == "answered" and result.privacy == mode
    return _sent(handler), run


def _modification(canary: dict[str, Path], mode: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Any]:
    """A duplicate-key error on the scratch copy: DuckDB's message names the key's value."""
    monkeypatch.setenv("DIA_PRIVACY", mode)
    handler = register_tools([
        call("declare_contract", kind="modification", targets=["visits"],
             post_condition_sql="SELECT COUNT(*) > 0 FROM visits"),
        call("submit", sql="INSERT INTO visits SELECT * FROM visits"),
        "giving up",
    ])
    result, run = answer_question("Copy every visit once more", canary["warehouse"], chat=litellm_chat(FAKE_MODEL),
                                  memory=InMemoryMemory(), settings=AgentSettings(timeout_s=10, max_attempts=1,
                                                                                  reflect=False))
    assert result.status == "failed"
    return _sent(handler), run


def _pipeline(canary: dict[str, Path], mode: str) -> tuple[str, Any]:
    from dia_assets.agents.analysis.run import answer_with_pipeline

    handler = register_tools([
        CONTRACT,
        call("run_pipeline", steps=[{"output": "as_numbers", "op": "sql",
                                     "sql": "SELECT CAST(full_name AS INTEGER) AS n FROM people"}]),
        call("run_pipeline", steps=[{"output": "kept", "op": "sem_filter", "table": "people",
                                     "column": "remark", "condition": "mentions a greeting"}]),
        call("submit", sql="SELECT role, COUNT(*) AS n FROM people GROUP BY role"),
    ])
    result, run = answer_with_pipeline("How many people per role?", canary["warehouse"], chat=litellm_chat(FAKE_MODEL),
                                       privacy=mode, embedder=HashEmbedder(),
                                       settings=AgentSettings(timeout_s=10, reflect=False))
    assert result.query.status == "answered"
    return _sent(handler), run


def _interpreter_and_catalog(canary: dict[str, Path], mode: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The interpreter's model pass and the catalog's domain namer."""
    from dia_assets.agents.catalog.build import build_catalog
    from dia_assets.agents.catalog.refresh import model_namer
    from dia_assets.agents.interpreter import interpret
    from dia_assets.agents.interpreter.enrich import enrich
    from dia_assets.contracts.manifest import Manifest
    from dia_assets.dagster.resources import LLMResource

    monkeypatch.setenv("DIA_PRIVACY", mode)
    handler = register_tools(["{}", "{}", "{}"])
    llm = LLMResource(model=FAKE_MODEL)
    interpretation = interpret(canary["raw"])
    enrich(interpretation, lambda m: llm.complete(m)[0], llm.model)
    build_catalog(interpretation, Manifest.read(canary["ws"] / "schema" / "manifest.json"), HashEmbedder(),
                  "canary", model_namer(FAKE_MODEL))
    assert len(handler.requests) >= 2  # both passes asked the model
    return _sent(handler)


@pytest.mark.parametrize("mode", MODES)
def test_no_canary_reaches_any_model_request(canary: dict[str, Path], mode: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    sent, run = _query_agent(canary, mode, monkeypatch)
    assert found(sent) == []
    probes = [e["result"] for e in run.trace["events"] if e["event"] == "tool" and e["name"] == "probe"]
    assert "privacy mode" in probes[0]  # raw rows refused
    failed = probes[2:2 + len(FAILING)]
    assert [p for p in failed if "\"error\"" not in p] == []  # every statement did fail in the engine
    assert "Could not convert string" in failed[0] and "full_name" in failed[0]  # the failure and the column stay
    assert "…" in failed[0]
    if mode == "aggregates":  # an aggregate over the data is shown; raw values never are
        assert '"rows": [[' in probes[1] and "privacy mode" not in probes[1]
    else:
        assert "privacy mode" in probes[1]
    read = [e["result"] for e in run.trace["events"] if e["event"] == "tool" and e["name"] == "read_memory"]
    assert "probe failed" in read[0]  # the memory probe failed in the engine, redacted
    submits = [e["result"] for e in run.trace["events"] if e["event"] == "tool" and e["name"] == "submit"]
    assert "execution_error" in submits[0] and "ConversionException" in submits[0]
    assert any(e["event"] == "reflection_prompt" for e in run.trace["events"])

    sent, run = _modification(canary, mode, monkeypatch)
    assert found(sent) == []
    outcome = next(e for e in run.trace["events"] if e["event"] == "modification")["outcome"]
    assert "Duplicate key" in outcome["detail"] and "…" in outcome["detail"]

    sent, run = _pipeline(canary, mode)
    assert found(sent) == []
    errors = [e["error"] for e in run.trace["events"] if e["event"] == "pipeline_error"]
    assert "Could not convert string" in errors[0] and "privacy mode" in errors[1]

    assert found(_interpreter_and_catalog(canary, mode, monkeypatch)) == []


def test_samples_mode_is_the_control(canary: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    """The same scan finds canaries when values may travel: the search itself works."""
    sent, _ = _query_agent(canary, "samples", monkeypatch)
    hits = found(sent)
    assert any(h.lower() == "zqx" for h in hits) and any(h.startswith("1911-") for h in hits)
    assert found(_modification(canary, "samples", monkeypatch)[0])
    assert found(_interpreter_and_catalog(canary, "samples", monkeypatch))


# -- MCP: every tool, resource and error ------------------------------------------------------------


def _mcp_session(target: Any, steps: list[tuple[str, str, dict[str, Any]]]) -> list[str]:
    """Every response of one session as text (tool content, structured content, resource
    text, error messages)."""
    async def main() -> list[str]:
        out: list[str] = []
        async with Client(target, read_timeout_seconds=120) as client:
            for kind, name, args in steps:
                if kind == "tool":
                    result = await client.call_tool(name, args)
                    texts = [getattr(c, "text", "") or "" for c in result.content]
                    out.append("\n".join(texts) + json.dumps(result.structured_content or {}, default=str))
                else:
                    try:
                        read = await client.read_resource(name)
                        out.append("\n".join(getattr(c, "text", "") for c in read.contents))
                    except MCPError as err:
                        out.append(str(err))
        return out
    return anyio.run(main)


def _mcp_steps() -> list[tuple[str, str, dict[str, Any]]]:
    return [
        ("tool", "list_tables", {}),
        ("tool", "describe_table", {"name": "people"}),
        ("tool", "describe_table", {"name": "visits"}),
        ("tool", "describe_table", {"name": "peeple"}),
        ("tool", "run_sql", {"sql": ROWS}),
        ("tool", "run_sql", {"sql": AVERAGE}),
        ("tool", "run_sql", {"sql": "SELECT COUNT(*) AS n, COUNT(DISTINCT role) AS roles FROM people"}),
        *[("tool", "run_sql", {"sql": sql}) for sql in FAILING.values()],
        ("tool", "lineage", {"target": "people.full_name"}),
        ("tool", "lineage", {"target": "visits"}),
        ("tool", "lineage", {"target": "SELECT role, COUNT(*) AS n FROM people GROUP BY role"}),
        ("tool", "ask", {"question": "How many people per role?", "question_id": "mcp_roles"}),
        ("tool", "lineage", {"target": "mcp_roles"}),
        ("tool", "search_memory", {"query": "people counting", "k": 5}),
        ("tool", "list_answers", {}),
        ("tool", "relationships", {}),
        ("resource", "dia://interpretation", {}),
        ("resource", "dia://manifest", {}),
        ("resource", "dia://validation", {}),
        ("resource", "dia://documents/interpretation", {}),
        ("resource", "dia://documents/manifest", {}),
        ("resource", "dia://documents/validation", {}),
    ]


def _mcp_run(canary: dict[str, Path], mode: str, db_url: str) -> tuple[list[str], str]:  # noqa: F811
    from dia_assets.agents.mcp.service import DiaService
    from dia_assets.agents.query.memory import warehouse_fingerprint
    from dia_assets.cli.mcp_server import build_server
    from dia_assets.platform.memory import Kind, MemoryStore, NewMemory, Tier

    store = MemoryStore.open(url=db_url, embedder=HashEmbedder())
    store.insert(NewMemory(tier=Tier.SESSION, kind=Kind.AGGREGATION, title="people counting rule",
                           body="Count people by badge.", probe_sql=BAD_PROBE, evidence=["test"],
                           scope=warehouse_fingerprint(str(canary["warehouse"]))))
    handler = register_tools([
        CONTRACT,
        call("probe", sql=FAILING["text_to_int"]),
        call("submit", sql="SELECT role, COUNT(*) AS n FROM people GROUP BY role"),
        "no lesson",
    ])
    svc = DiaService(warehouse=str(canary["warehouse"]), workspace=canary["ws"], privacy=mode,
                     chat=litellm_chat(FAKE_MODEL), memory_factory=lambda: store)
    try:
        responses = _mcp_session(build_server(svc), _mcp_steps())
    finally:
        store.close()
    return responses, _sent(handler)


@pytest.mark.parametrize("mode", MODES)
def test_no_canary_reaches_an_mcp_host(canary: dict[str, Path], mode: str, db_url: str,  # noqa: F811
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIA_CHART_MODEL", raising=False)
    responses, sent = _mcp_run(canary, mode, db_url)
    leaks = {step[1] + json.dumps(step[2])[:60]: found(text) for step, text in zip(_mcp_steps(), responses, strict=True)
             if found(text)}
    assert leaks == {}
    assert found(sent) == []  # the model inside `ask`
    by_step = dict(zip([s[1] + json.dumps(s[2]) for s in _mcp_steps()], responses, strict=True))
    failed = [t for (kind, name, args), t in zip(_mcp_steps(), responses, strict=True)
              if name == "run_sql" and args["sql"] in FAILING.values()]
    assert all("failed:" in t for t in failed), failed  # engine errors, as messages
    assert "when casting from source column full_name" in failed[0]
    lookup = next(q for q in json.loads(by_step["dia://documents/validation{}"])["test_queries"]
                  if q["name"] == "lookup people by key")
    assert lookup["sql"].endswith("= '…'") and lookup["passed"] is True  # the test query, without its literal
    memory = by_step['search_memory{"query": "people counting", "k": 5}']
    assert re.search(r'"holds_now":\s*false', memory) and "Could not convert string" in memory
    average = by_step['run_sql{"sql": "' + AVERAGE + '"}']
    assert ("privacy mode" in average) is (mode == "schema-only")


def test_mcp_samples_mode_is_the_control(canary: dict[str, Path], db_url: str,  # noqa: F811
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIA_CHART_MODEL", raising=False)
    responses, _ = _mcp_run(canary, "samples", db_url)
    assert sum(1 for text in responses if found(text)) >= 5
