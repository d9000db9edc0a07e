"""`dia mcp`: the MCP server, driven by the official SDK's own client: in-process for the
tool logic, over stdio (spawning `dia mcp`) and over streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import base64
import json
import os
import shutil
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

from dia_assets.agents.mcp.service import DiaService, ToolRefused
from dia_assets.cli.mcp_server import build_server
from tests.memory_fixtures import HashEmbedder, db_url, fresh_database_url, pg_server  # noqa: F401 - pytest fixtures
from tests.query_fixtures import FAKE_MODEL, call, register_tools

ROOT = Path(__file__).resolve().parents[1]
TOOLS = {"list_tables", "describe_table", "ask", "run_sql", "lineage", "search_memory", "list_answers",
         "relationships"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace built by the Schema Creator from the example data (the demo's overrides)."""
    from dia_assets.pipeline import run

    os.environ.pop("DIA_WAREHOUSE", None)
    ws = tmp_path_factory.mktemp("mcp") / "ws"
    result = run(ROOT / "examples" / "data", ws, overrides_seed=ROOT / "examples" / "data" / "overrides.yaml")
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
        ("resource", "dia://documents/interpretation", {}),
    ])
    assert tools == TOOLS
    assert resources == {"dia://interpretation", "dia://manifest", "dia://validation"}
    rows = {t["table"]: t["rows"] for t in payload(tables)["tables"]}
    assert rows["payroll"] > 1000 and "staff" in rows
    assert any(c.get("sample_values") for c in payload(staff)["columns"])  # samples mode
    result = payload(counts)
    assert result["columns"] == ["role", "n"] and sum(r[1] for r in result["rows"]) == rows["staff"]
    # a page of the agent's probe row cap, and a cursor for the rest
    assert len(payload(capped)["rows"]) == 50 and payload(capped)["next_cursor"]
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
    from dia_assets.platform.model.litellm import litellm_chat

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
    from dia_assets.platform.model.litellm import litellm_chat

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
        ("resource", "dia://documents/interpretation", {}),
        ("resource", "dia://documents/validation", {}),
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
    from dia_assets.agents.query.memory import warehouse_fingerprint
    from dia_assets.platform.memory import Kind, MemoryStore, NewMemory, Tier

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


# -- what a host reads before it calls: schemas, bounds, annotations, prompts, templates --------


def with_client(target: Any, body: Any) -> Any:
    """Run `body(client)` in one in-process client session."""
    async def main() -> Any:
        async with Client(target, read_timeout_seconds=120) as client:
            return await body(client)
    return anyio.run(main)


def test_tools_describe_parameters_bounds_annotations_and_output_schemas(built: Path) -> None:
    async def body(client: Any) -> Any:
        return ((await client.list_tools()).tools, (await client.list_prompts()).prompts,
                (await client.list_resource_templates()).resource_templates,
                await client.get_prompt("explore_warehouse", {}),
                await client.get_prompt("answer_question", {"question": "Who earns most?"}))
    tools, prompts, templates, explore, answer = with_client(build_server(service(built)), body)
    by_name = {t.name: t for t in tools}
    assert set(by_name) == TOOLS
    for tool in tools:
        assert tool.description and len(tool.description) > 40, tool.name
        for param, schema in tool.input_schema.get("properties", {}).items():
            assert schema.get("description"), (tool.name, param)
        assert tool.output_schema and tool.output_schema.get("type") == "object", tool.name
        read_only = tool.name != "ask"
        assert tool.annotations.read_only_hint is read_only, tool.name
        assert tool.annotations.idempotent_hint is read_only, tool.name
        assert tool.annotations.destructive_hint is (not read_only), tool.name  # ask replaces queries/<id>/
    k = by_name["search_memory"].input_schema["properties"]["k"]
    assert (k["type"], k["minimum"], k["maximum"]) == ("integer", 1, 50)
    size = by_name["run_sql"].input_schema["properties"]["page_size"]
    assert (size["minimum"], size["maximum"], size["default"]) == (1, 500, 50)
    assert by_name["run_sql"].input_schema["properties"]["sql"]["maxLength"] == 100_000
    page = by_name["run_sql"].output_schema["properties"]
    assert {"columns", "rows", "next_cursor", "offset"} <= set(page)
    assert {"status", "sql", "verification", "question_id"} <= set(by_name["ask"].output_schema["properties"])
    assert {p.name for p in prompts} == {"explore_warehouse", "answer_question"}
    assert [a.name for a in next(p for p in prompts if p.name == "answer_question").arguments] == ["question"]
    assert "list_tables" in explore.messages[0].content.text
    assert "Who earns most?" in answer.messages[0].content.text
    assert [t.uri_template for t in templates] == ["dia://documents/{name}"]


@pytest.mark.parametrize(("tool", "args", "field"), [
    ("search_memory", {"query": "staff", "k": -1}, "k"),
    ("search_memory", {"query": "staff", "k": 51}, "k"),
    ("run_sql", {"sql": "SELECT 1", "page_size": 0}, "page_size"),
    ("run_sql", {"sql": ""}, "sql"),
    ("describe_table", {"name": "s" * 600}, "name"),
    ("list_answers", {"page_size": 10_000}, "page_size"),
])
def test_arguments_out_of_bounds_are_one_line_errors(built: Path, tool: str, args: dict[str, Any], field: str) -> None:
    (result,) = session(build_server(service(built)), [("tool", tool, args)])
    text = error(result)
    assert "\n" not in text and f"invalid arguments: {field}:" in text and tool in text
    with pytest.raises(ToolRefused, match="k must be a whole number from 1 to 50"):  # the service refuses too
        service(built).search_memory("staff", -1)


def rows_of(ws: Path, sql: str) -> list[tuple[Any, ...]]:
    """Rows straight from the warehouse file, the connection closed before the server opens it."""
    with duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True) as con:
        return con.execute(sql).fetchall()


def test_decimals_are_numbers_and_dates_iso_text(built: Path) -> None:
    types = rows_of(built, "SELECT typeof(gross_pay), typeof(paid_on) FROM payroll LIMIT 1")[0]
    assert types == ("DECIMAL(18,2)", "DATE")  # the columns under test really are these
    (result,) = session(build_server(service(built)), [
        ("tool", "run_sql", {"sql": "SELECT badge, gross_pay, paid_on, SUM(gross_pay) OVER () AS total "
                                    "FROM payroll ORDER BY badge, paid_on LIMIT 3"})])
    for rows in (result.structured_content["rows"], payload(result)["rows"]):
        badge, pay, paid_on, total = rows[0]
        assert isinstance(pay, float) and isinstance(total, float) and not isinstance(pay, bool)
        assert isinstance(paid_on, str) and len(paid_on) == 10 and paid_on[4] == "-"
    first = rows_of(built, "SELECT gross_pay FROM payroll ORDER BY badge, paid_on LIMIT 1")[0][0]
    assert result.structured_content["rows"][0][1] == float(first)


def test_paging_returns_every_row_exactly_once(built: Path) -> None:
    ((last,),) = rows_of(built, "SELECT badge FROM staff ORDER BY badge LIMIT 1 OFFSET 119")
    sql = f"SELECT badge, role, hourly_rate FROM staff WHERE badge <= '{last}'"  # 120 rows, no ORDER BY
    expected = sorted(rows_of(built, sql))
    assert len(expected) == 120
    svc = build_server(service(built))

    async def body(client: Any) -> list[Any]:
        pages, cursor = [], None
        while True:
            args = {"sql": sql, "page_size": 50} | ({"cursor": cursor} if cursor else {})
            result = await client.call_tool("run_sql", args)
            assert not result.is_error, result.content[0].text
            pages.append(result.structured_content)
            cursor = result.structured_content["next_cursor"]
            if cursor is None or len(pages) > 5:
                break
        other = await client.call_tool("run_sql", {"sql": "SELECT badge FROM staff", "cursor": pages[0]["next_cursor"]})
        return [pages, other]
    pages, other = with_client(svc, body)
    assert [p["shown"] for p in pages] == [50, 50, 20] and [p["offset"] for p in pages] == [0, 50, 100]
    rows = [tuple(r) for p in pages for r in p["rows"]]
    assert len(rows) == len(set(rows)) == 120
    assert sorted(rows) == [(b, r, float(h) if h is not None else None) for b, r, h in expected]
    assert "cursor belongs to another statement" in error(other)


def test_paging_inside_a_statement_with_its_own_limit(built: Path) -> None:
    sql = "SELECT badge FROM staff ORDER BY badge DESC LIMIT 7"
    first, = session(build_server(service(built)), [("tool", "run_sql", {"sql": sql, "page_size": 5})])
    second, = session(build_server(service(built)), [
        ("tool", "run_sql", {"sql": sql, "page_size": 5, "cursor": first.structured_content["next_cursor"]})])
    shown = [r[0] for r in first.structured_content["rows"] + second.structured_content["rows"]]
    assert shown == [b for (b,) in rows_of(built, sql)]  # its own order and window kept
    assert second.structured_content["next_cursor"] is None


def test_rows_past_the_byte_cap_come_on_the_next_page(built: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIA_RESULT_BYTES", "5000")
    ((last,),) = rows_of(built, "SELECT badge FROM staff ORDER BY badge LIMIT 1 OFFSET 9")
    sql = f"SELECT badge, repeat('z', 2000) AS pad FROM staff WHERE badge <= '{last}'"  # 10 rows of ~2 KB

    async def body(client: Any) -> list[dict[str, Any]]:
        pages, cursor = [], None
        while len(pages) < 20:
            result = await client.call_tool("run_sql", {"sql": sql} | ({"cursor": cursor} if cursor else {}))
            pages.append(result.structured_content)
            cursor = pages[-1]["next_cursor"]
            if cursor is None:
                break
        return pages
    pages = with_client(build_server(service(built)), body)
    assert len(pages) > 1 and all(p["shown"] < 10 and p["cut"] for p in pages[:-1])
    badges = [r[0] for p in pages for r in p["rows"]]
    assert sorted(badges) == [b for (b,) in rows_of(built, f"SELECT badge FROM staff WHERE badge <= '{last}' "
                                                              "ORDER BY badge")]


def test_list_answers_and_relationships(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dia_assets.platform.model.litellm import litellm_chat

    monkeypatch.delenv("DIA_CHART_MODEL", raising=False)
    ws = tmp_path / "ws"
    shutil.copytree(built, ws, ignore=shutil.ignore_patterns("queries"))  # no answers yet
    register_tools([
        call("declare_contract", kind="analytical", columns=["n"], granularity={"description": "all",
                                                                                "key_columns": []}),
        call("submit", sql="SELECT COUNT(*) AS n FROM staff"),
        "no lesson",
        call("declare_contract", kind="analytical", columns=["department_code", "wards"],
             granularity={"description": "department", "key_columns": ["department_code"]}),
        call("submit", sql="SELECT department_code, COUNT(*) AS wards FROM hospital_wards GROUP BY department_code"),
    ])
    svc = service(ws, chat=litellm_chat(FAKE_MODEL))
    steps = [("tool", "list_answers", {}),
             ("tool", "ask", {"question": "How many staff?", "question_id": "a_staff_count"}),
             ("tool", "ask", {"question": "How many wards per department?", "question_id": "b_wards"}),
             ("tool", "list_answers", {"page_size": 1}),
             ("tool", "relationships", {}),
             ("tool", "relationships", {"table": "hospital_wards", "to": "payroll"}),
             ("tool", "relationships", {"table": "nowhere"})]
    empty, asked1, asked2, first, keys, path, unknown = session(build_server(svc), steps)
    assert payload(empty)["answers"] == [] and payload(empty)["total"] == 0
    assert payload(asked1)["status"] == payload(asked2)["status"] == "answered"
    page = first.structured_content
    assert page["total"] == 2 and [a["question_id"] for a in page["answers"]] == ["a_staff_count"]
    (second,) = session(build_server(svc), [("tool", "list_answers", {"page_size": 1, "cursor": page["next_cursor"]})])
    answer = second.structured_content["answers"][0]
    assert (answer["question_id"], answer["verified"], answer["status"]) == ("b_wards", True, "answered")
    assert answer["sql"].startswith("SELECT department_code") and second.structured_content["next_cursor"] is None
    joins = {k["join"] for k in keys.structured_content["foreign_keys"]}
    manifest = json.loads((ws / "schema" / "manifest.json").read_text())
    declared = {(t["name"], tuple(k["columns"]), k["ref_table"]) for t in manifest["tables"] for k in t["foreign_keys"]}
    assert len(joins) == len(declared) and "payroll.badge = staff.badge" in joins
    assert path.structured_content["join_path"] == {
        "tables": ["hospital_wards", "hospital_departments", "staff", "payroll"],
        "joins": ["hospital_wards.department_code = hospital_departments.department_code",
                  "staff.department_code = hospital_departments.department_code",  # surer than head_badge
                  "payroll.badge = staff.badge"]}
    assert "no table 'nowhere'" in error(unknown) and "staff" in error(unknown)


def test_ask_with_a_failing_model_is_an_error(built: Path, tmp_path: Path) -> None:
    from dia_assets.platform.model.litellm import litellm_chat

    def outage(messages: list[dict[str, Any]]) -> Any:
        raise RuntimeError("scripted outage")

    ws = tmp_path / "ws"
    shutil.copytree(built, ws)
    register_tools([outage] * 20)
    (result,) = session(build_server(service(ws, chat=litellm_chat(FAKE_MODEL))), [
        ("tool", "ask", {"question": "How many staff?", "question_id": "outage"})])
    text = error(result)
    assert text.startswith("ask failed:") and "scripted outage" in text and "\n" not in text
    assert result.structured_content["status"] == "failed"


def test_resources_are_summaries_with_the_full_documents_behind_them(built: Path) -> None:
    names = ["interpretation", "manifest", "validation"]
    results = session(build_server(service(built)), [("resource", f"dia://{n}", {}) for n in names])
    fulls = session(build_server(service(built)),
                    [("resource", json.loads(r.contents[0].text)["full_document"], {}) for r in results])
    for name, summary, full in zip(names, results, fulls, strict=True):
        text, whole = summary.contents[0].text, full.contents[0].text
        assert len(text.encode()) < 4_000 < 30_000 < len(whole.encode()), (name, len(text), len(whole))
        on_disk = {"interpretation": "interpretation.json", "manifest": "schema/manifest.json",
                   "validation": "validation/report.json"}[name]
        assert json.loads(whole) == json.loads((built / on_disk).read_text())  # samples mode: as written
    manifest = json.loads(results[1].contents[0].text)
    assert {t["name"] for t in manifest["tables"]} == {t["name"] for t in json.loads(fulls[1].contents[0].text)["tables"]}
    assert json.loads(results[2].contents[0].text)["accepted"] is True
    (missing,) = session(build_server(service(built)), [("resource", "dia://documents/nothing", {})])
    assert isinstance(missing, MCPError) and "no document 'nothing'" in str(missing)


def test_on_postgres_numeric_is_a_number_and_paging_holds(tmp_path: Path, pg_server: Any,  # noqa: F811
                                                          example_interpretation: Any) -> None:
    """PostgreSQL hands NUMERIC back as Decimal and has no ORDER BY ALL: the same tools there."""
    from dia_assets.pipeline import run

    url = fresh_database_url(pg_server, f"mcp_{os.getpid()}")
    ws = tmp_path / "ws"
    assert run(ROOT / "examples" / "data", ws, warehouse=url, interpretation=example_interpretation,
               overrides_seed=ROOT / "examples" / "data" / "overrides.yaml").report.accepted
    svc = DiaService(warehouse=url, workspace=ws, privacy="samples", use_memory=False)
    sql = "SELECT badge, gross_pay, paid_on FROM payroll WHERE gross_pay IS NOT NULL"
    total = len(rows_of_pg(url, sql))
    assert rows_of_pg(url, "SELECT pg_typeof(gross_pay)::text FROM payroll LIMIT 1") == [("numeric",)]

    async def body(client: Any) -> list[Any]:
        pages, cursor = [], None
        while len(pages) < 200:
            result = await client.call_tool("run_sql", {"sql": sql, "page_size": 500} | (
                {"cursor": cursor} if cursor else {}))
            assert not result.is_error, result.content[0].text
            pages.append(result.structured_content)
            cursor = pages[-1]["next_cursor"]
            if cursor is None:
                break
        pages.append((await client.call_tool("relationships", {})).structured_content)
        return pages
    *pages, keys = with_client(build_server(svc), body)
    rows = [tuple(r) for p in pages for r in p["rows"]]
    assert len(rows) == len(set(rows)) == total > 1000 and len(pages) > 2
    assert all(isinstance(r[1], float) and isinstance(r[2], str) for r in rows)
    assert "payroll.badge = staff.badge" in {k["join"] for k in keys["foreign_keys"]}


def rows_of_pg(url: str, sql: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(url) as con:
        return con.execute(sql).fetchall()


# -- over the wire: `dia mcp` as a subprocess -------------------------------------------------


def _env(ws: Path) -> dict[str, str]:
    return {"PYTHONPATH": str(ROOT), "DIA_WAREHOUSE": str(ws / "warehouse.duckdb"), "DIA_WORKSPACE": str(ws),
            "LITELLM_LOCAL_MODEL_COST_MAP": "True", "DIA_PRIVACY": "samples"}


DIA = ["-c", "from dia_assets.cli.app import app; app()", "mcp"]


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

    from dia_assets.cli.app import app

    result = CliRunner().invoke(app, ["mcp", "--http", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "loopback" in result.output


def test_a_bad_privacy_mode_is_a_message() -> None:
    from typer.testing import CliRunner

    from dia_assets.cli.app import app

    result = CliRunner().invoke(app, ["mcp"], env={"DIA_PRIVACY": "nothing"})
    assert result.exit_code == 2 and "DIA_PRIVACY=nothing: expected one of schema-only, aggregates, samples" in result.output
