"""`dia mcp`: the MCP server, driven by the official SDK's own client: in-process for the
tool logic, over stdio (spawning `dia mcp`) and over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import duckdb
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from dia_assets.agents.mcp.service import DiaService
from dia_assets.mcp_server import build_server
from tests.memory_fixtures import HashEmbedder, db_url, pg_server  # noqa: F401 - pytest fixtures
from tests.query_fixtures import FAKE_MODEL, call, register_tools

ROOT = Path(__file__).resolve().parents[1]
TOOLS = {"list_tables", "describe_table", "ask", "run_sql", "lineage", "search_memory"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace built by the Schema Creator from the example data (the demo's overrides)."""
    from dia_assets.agents.schema_creator.build import run

    os.environ.pop("DIA_WAREHOUSE", None)
    ws = tmp_path_factory.mktemp("mcp") / "ws"
    result = run(ROOT / "examples" / "data", ws, overrides_seed=ROOT / "examples" / "overrides.yaml")
    assert result.report.accepted
    return ws


def service(ws: Path, privacy: str = "samples", **kwargs: Any) -> DiaService:
    return DiaService(warehouse=str(ws / "warehouse.duckdb"), workspace=ws, privacy=privacy,
                      use_memory=kwargs.pop("use_memory", False), **kwargs)


def session(target: Any, steps: list[tuple[str, str, dict[str, Any]]], token: str | None = None) -> list[Any]:
    """Run (kind, name, arguments) steps in one client session; kind is tool, resource or list.
    `token`: the bearer token of an HTTP server."""
    async def main() -> list[Any]:
        if token is None:
            return await run(target)
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {token}"}) as http:
            return await run(streamable_http_client(target, http_client=http))

    async def run(target: Any) -> list[Any]:
        out: list[Any] = []
        async with Client(target, read_timeout_seconds=120) as client:
            for kind, name, args in steps:
                if kind == "tool":
                    out.append(await client.call_tool(name, args))
                elif kind == "resource":
                    try:
                        out.append(await client.read_resource(name))
                    except MCPError as err:  # a resource that cannot be read: the server's message
                        out.append(err)
                elif kind == "tools":
                    out.append({t.name for t in (await client.list_tools()).tools})
                else:
                    out.append({str(r.uri) for r in (await client.list_resources()).resources})
        return out
    return anyio.run(main)


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def error(result: Any) -> str:
    assert result.is_error
    return result.content[0].text


# -- in process -------------------------------------------------------------------------------


def test_tools_and_resources(built: Path) -> None:
    tools, resources, tables, staff, counts, capped, column, sql, manifest, interp = session(build_server(service(built)), [
        ("tools", "", {}), ("resources", "", {}),
        ("tool", "list_tables", {}),
        ("tool", "describe_table", {"name": "staff"}),
        ("tool", "run_sql", {"sql": "SELECT role, COUNT(*) AS n FROM staff GROUP BY role ORDER BY n DESC"}),
        ("tool", "run_sql", {"sql": "SELECT * FROM payroll"}),
        ("tool", "lineage", {"target": "staff.role"}),
        ("tool", "lineage", {"target": "SELECT s.role, SUM(p.gross_pay) AS pay FROM staff s "
                                       "JOIN payroll p ON p.badge = s.badge GROUP BY s.role"}),
        ("resource", "dia://manifest", {}),
        ("resource", "dia://interpretation", {}),
    ])
    assert tools == TOOLS
    assert resources == {"dia://interpretation", "dia://manifest", "dia://validation"}
    rows = {t["table"]: t["rows"] for t in payload(tables)["tables"]}
    assert rows["payroll"] > 1000 and "staff" in rows
    assert any(c.get("sample_values") for c in payload(staff)["columns"])  # samples mode
    result = payload(counts)
    assert result["columns"] == ["role", "n"] and sum(r[1] for r in result["rows"]) == rows["staff"]
    # the agent's probe row cap applies
    assert len(payload(capped)["rows"]) == 50 and payload(capped)["row_count"] == ">50"
    assert payload(column)["sources"] == [{"source": "staff", "file": "staff.csv", "column": "role"}]
    pay = payload(sql)["columns"]["pay"]
    assert pay == [{"warehouse": "payroll.gross_pay",
                    "sources": [{"source": "payroll", "file": "payroll.parquet", "column": "gross_pay"}]}]
    assert "staff" in {t["name"] for t in json.loads(manifest.contents[0].text)["tables"]}
    assert "top_values" in interp.contents[0].text


def test_run_sql_refuses_writes_and_everything_outside_the_refined_tables(built: Path) -> None:
    before = duckdb.connect(str(built / "warehouse.duckdb"), read_only=True).execute(
        "SELECT COUNT(*) FROM staff").fetchone()
    statements = {
        "DELETE FROM staff": "write",
        "UPDATE staff SET role = 'x'": "write",
        "DROP TABLE staff": "",
        "SELECT 1; DROP TABLE staff": "",
        "SELECT * FROM staging.staff": "",
        "SELECT * FROM information_schema.tables": "",
        "SELECT * FROM read_csv('/etc/passwd')": "",
        "SELECT nope FROM staff": "",
    }
    results = session(build_server(service(built)), [("tool", "run_sql", {"sql": s}) for s in statements])
    for (sql, word), result in zip(statements.items(), results, strict=True):
        text = error(result)
        assert "run_sql" in text and ("refused" in text or "failed" in text), sql
        assert word in text, (sql, text)
    after = duckdb.connect(str(built / "warehouse.duckdb"), read_only=True).execute(
        "SELECT COUNT(*) FROM staff").fetchone()
    assert before == after


def test_errors_are_messages(built: Path, tmp_path: Path) -> None:
    no_table, no_target, bad_sql = session(build_server(service(built)), [
        ("tool", "describe_table", {"name": "staf"}),
        ("tool", "lineage", {"target": "nothing_here"}),
        ("tool", "lineage", {"target": "SELECT * FROM staging.staff"}),
    ])
    assert "refused" in error(bad_sql)  # lineage of SQL passes the same gate (nothing runs)
    assert "no table 'staf'" in error(no_table) and "staff" in error(no_table)
    assert "no saved answer, table or SQL 'nothing_here'" in error(no_target)
    missing = DiaService(warehouse=str(tmp_path / "none.duckdb"), workspace=tmp_path, use_memory=False)
    (no_wh,) = session(build_server(missing), [("tool", "list_tables", {})])
    assert "no warehouse at" in error(no_wh) and "dia build" in error(no_wh)
    (no_report,) = session(build_server(missing), [("resource", "dia://validation", {})])
    assert isinstance(no_report, MCPError) and "no validation yet" in str(no_report) and "dia build" in str(no_report)


def test_ask_runs_the_full_agent_and_lineage_follows_the_answer(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dia_assets.agents.query.llm import litellm_chat

    monkeypatch.delenv("DIA_CHART_MODEL", raising=False)
    register_tools([
        call("declare_contract", kind="analytical", columns=["role", "staff_count"],
             granularity={"description": "role", "key_columns": ["role"]}),
        call("submit", sql="SELECT role, COUNT(*) AS staff_count FROM staff GROUP BY role"),
    ])
    svc = service(built, chat=litellm_chat(FAKE_MODEL))
    answered, lineage, column, unread = session(build_server(svc), [
        ("tool", "ask", {"question": "How many staff members per role?", "question_id": "staff_per_role"}),
        ("tool", "lineage", {"target": "staff_per_role"}),
        ("tool", "lineage", {"target": "staff.role"}),
        ("tool", "lineage", {"target": "staff.email"}),
    ])
    result = payload(answered)
    assert result["status"] == "answered" and result["verification"]["passed"] is True
    assert result["chart"]["kind"] == "bar" and Path(result["chart"]["files"]["png"]).exists()
    assert len(result["rows"]) == result["row_count"] > 1  # samples mode: rows reach the host
    image = answered.content[1]  # samples mode: the chart comes back as an image too
    assert image.type == "image" and image.mime_type == "image/png"
    assert base64.b64decode(image.data) == Path(result["chart"]["files"]["png"]).read_bytes()
    assert answered.structured_content["status"] == "answered"
    traced = payload(lineage)["columns"]["role"]
    assert traced == [{"warehouse": "staff.role", "sources": [{"source": "staff", "file": "staff.csv", "column": "role"}]}]
    # which answers read this column: the one that grouped by it, not a column it never touched
    assert [a["question_id"] for a in payload(column)["read_by"]] == ["staff_per_role"]
    assert payload(unread)["read_by"] == []


def test_ask_refuses_a_question_id_that_leaves_the_queries_folder(built: Path) -> None:
    (result,) = session(build_server(service(built, chat=lambda m, t: None)),  # never called
                        [("tool", "ask", {"question": "How many staff?", "question_id": "../../escape"})])
    assert "question id must be" in error(result)
    assert not (built.parent / "escape").exists() and not (built / "escape").exists()


def test_without_a_model_ask_says_how_to_set_one(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIA_MODEL", raising=False)
    (result,) = session(build_server(service(built)), [("tool", "ask", {"question": "How many staff?"})])
    assert "DIA_MODEL" in error(result)


def test_schema_only_privacy_keeps_data_values_from_the_host(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dia_assets.agents.query.llm import litellm_chat

    monkeypatch.setenv("DIA_PRIVACY", "samples")  # the server's mode wins, for the agent inside `ask` too
    register_tools([
        call("declare_contract", kind="analytical", columns=["role", "staff_count"],
             granularity={"description": "role", "key_columns": ["role"]}),
        call("submit", sql="SELECT role, COUNT(*) AS staff_count FROM staff GROUP BY role"),
    ])
    svc = service(built, privacy="schema-only", chat=litellm_chat(FAKE_MODEL))
    staff, values, count, answered, interp, report = session(build_server(svc), [
        ("tool", "describe_table", {"name": "staff"}),
        ("tool", "run_sql", {"sql": "SELECT role FROM staff"}),
        ("tool", "run_sql", {"sql": "SELECT COUNT(*) AS n FROM staff"}),
        ("tool", "ask", {"question": "How many staff members per role?", "question_id": "private"}),
        ("resource", "dia://interpretation", {}),
        ("resource", "dia://validation", {}),
    ])
    assert not any("sample_values" in c for c in payload(staff)["columns"])
    assert "privacy mode schema-only" in error(values)
    assert payload(count)["rows"][0][0] > 0  # counts may be shown
    result = payload(answered)
    assert result["status"] == "answered" and "rows" not in result and "rows_withheld" in result
    assert result["privacy"] == "schema-only"  # the agent's own model ran under the same mode
    assert result["row_count"] > 1 and result["chart"]["kind"] == "bar"  # the user's files still have it
    assert [c.type for c in answered.content] == ["text"]  # no chart image: its labels are data values
    text = interp.contents[0].text
    for field in ('"top_values"', '"examples"', '"min"', '"max"'):
        assert field not in text
    assert '"row_count"' in text  # counts and names stay
    assert '"examples"' not in report.contents[0].text
    staff_roles = duckdb.connect(str(built / "warehouse.duckdb"), read_only=True).execute(
        "SELECT DISTINCT role FROM staff").fetchall()
    shown = "".join(c.text for r in (staff, count, answered) for c in r.content) + text
    assert not any(role in shown for (role,) in staff_roles)


def test_search_memory_recalls_lessons_with_their_check(built: Path, db_url: str) -> None:  # noqa: F811
    from dia_assets.agents.memory import Kind, MemoryStore, NewMemory, Tier
    from dia_assets.agents.query.memory import warehouse_fingerprint

    store = MemoryStore.open(url=db_url, embedder=HashEmbedder())
    scope = warehouse_fingerprint(str(built / "warehouse.duckdb"))
    store.insert(NewMemory(tier=Tier.SESSION, kind=Kind.AGGREGATION, title="staff per role counts badges",
                           body="Count staff with COUNT(DISTINCT staff.badge).",
                           probe_sql="SELECT COUNT(*) > 0 FROM staff", evidence=["test"], scope=scope))
    store.insert(NewMemory(tier=Tier.SESSION, kind=Kind.FILTER, title="staff on ward 99 only",
                           body="Filter ward 99.", probe_sql="SELECT COUNT(*) > 0 FROM staff WHERE 1 = 0",
                           evidence=["test"], scope=scope))
    svc = service(built, use_memory=True, memory_factory=lambda: store)
    (found,) = session(build_server(svc), [("tool", "search_memory", {"query": "staff per role", "k": 5})])
    items = {i["title"]: i for i in payload(found)["items"]}
    assert items["staff per role counts badges"]["holds_now"] is True
    assert items["staff per role counts badges"]["rule"].startswith("Count staff")
    assert items["staff on ward 99 only"]["holds_now"] is False  # its precondition fails on this data
    store.close()


# -- over the wire: `dia mcp` as a subprocess -------------------------------------------------


def _env(ws: Path) -> dict[str, str]:
    return {"PYTHONPATH": str(ROOT), "DIA_WAREHOUSE": str(ws / "warehouse.duckdb"), "DIA_WORKSPACE": str(ws),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", "DIA_PRIVACY": "samples"}


DIA = ["-c", "from dia_assets.cli import app; app()", "mcp"]


def test_stdio_transport(built: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=DIA, env=_env(built), cwd=str(built))
    tools, tables, refused = session(params, [
        ("tools", "", {}), ("tool", "list_tables", {}), ("tool", "run_sql", {"sql": "DROP TABLE staff"}),
    ])
    assert tools == TOOLS
    assert "staff" in {t["table"] for t in payload(tables)["tables"]}
    assert "refused" in error(refused)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server(built: Path) -> Iterator[str]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, *DIA, "--http", "--port", str(port)], env=os.environ | _env(built),
                            cwd=str(built), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        for _ in range(600):  # wait for the port (a slow, shared machine); no timing is asserted
            if proc.poll() is not None:
                raise AssertionError(f"dia mcp --http exited: {proc.stderr.read().decode()[-2000:]}")
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_streamable_http_transport_on_loopback(http_server: str, built: Path) -> None:
    token = (built / "mcp_token").read_text().strip()  # the server's bearer token (tests/security: without it, 401)
    tools, counted, refused = session(http_server, [
        ("tools", "", {}),
        ("tool", "run_sql", {"sql": "SELECT COUNT(*) AS n FROM staff"}),
        ("tool", "run_sql", {"sql": "INSERT INTO staff (badge) VALUES ('x')"}),
    ], token=token)
    assert tools == TOOLS
    assert payload(counted)["rows"][0][0] > 0
    assert "refused" in error(refused)


def test_http_refuses_a_non_loopback_address() -> None:
    from typer.testing import CliRunner

    from dia_assets.cli import app

    result = CliRunner().invoke(app, ["mcp", "--http", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "loopback" in result.output


def test_a_bad_privacy_mode_is_a_message() -> None:
    from typer.testing import CliRunner

    from dia_assets.cli import app

    result = CliRunner().invoke(app, ["mcp"], env={"DIA_PRIVACY": "nothing"})
    assert result.exit_code == 2 and "DIA_PRIVACY=nothing: expected one of schema-only, aggregates, samples" in result.output
