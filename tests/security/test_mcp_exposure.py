"""Issue 27, items 5 and 8 (MCP): `dia mcp --http` answered any local user; `run_sql`
returned 100 MB; `lineage` with a 200,000-character target failed with an empty message;
starting the embedded memory store widened a private workspace and its parent to 0755.

The HTTP server runs as `dia mcp --http` in a subprocess on 127.0.0.1, reached over real HTTP
with and without the token."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx2  # the MCP SDK's own HTTP client
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from dia_assets.agents.mcp.auth import TOKEN_FILE, load_or_create_token
from dia_assets.agents.mcp.service import INPUT_LIMITS, DiaService, ToolRefused
from tests.query_fixtures import build_tiny_duckdb

ROOT = Path(__file__).resolve().parents[2]
DIA = ["-c", "from dia_assets.cli.app import app; app()", "mcp", "--http"]
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    build_tiny_duckdb(ws / "warehouse.duckdb")
    return ws


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`dia mcp --http` as a subprocess; stops on exit and keeps what it printed."""

    def __init__(self, ws: Path, *args: str) -> None:
        self.port = _free_port()
        env = os.environ | {"PYTHONPATH": str(ROOT), "DIA_WORKSPACE": str(ws), "DIA_PRIVACY": "samples",
                            "DIA_WAREHOUSE": str(ws / "warehouse.duckdb"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
        self.proc = subprocess.Popen([sys.executable, *DIA, "--port", str(self.port), *args], env=env,
                                     cwd=str(ws), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.stderr = ""

    def __enter__(self) -> Server:
        for _ in range(600):  # wait for the port (a slow, shared machine); no timing is asserted
            if self.proc.poll() is not None:
                raise AssertionError(f"dia mcp --http exited: {self.proc.stderr.read()[-2000:]}")  # type: ignore[union-attr]
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return self
            time.sleep(0.2)
        raise AssertionError("dia mcp --http did not listen")

    def __exit__(self, *exc: Any) -> None:
        self.proc.terminate()
        try:
            _, self.stderr = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, self.stderr = self.proc.communicate()


def _tables(url: str, token: str) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
        async with http, Client(streamable_http_client(url, http_client=http), read_timeout_seconds=60) as client:
            result = await client.call_tool("list_tables", {})
            return json.loads(result.content[0].text)
    return anyio.run(main)


def test_http_needs_the_bearer_token(ws: Path) -> None:
    with Server(ws) as server:
        path = ws / TOKEN_FILE
        token = path.read_text().strip()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600 and len(token) >= 32
        missing = httpx2.post(server.url, json=INITIALIZE, headers=HEADERS, timeout=30)
        wrong = httpx2.post(server.url, json=INITIALIZE, headers=HEADERS | {"authorization": "Bearer nope"}, timeout=30)
        basic = httpx2.post(server.url, json=INITIALIZE, headers=HEADERS | {"authorization": f"Basic {token}"},
                           timeout=30)
        assert (missing.status_code, wrong.status_code, basic.status_code) == (401, 401, 401)
        assert "Bearer" in missing.headers["www-authenticate"] and "mcp_token" in missing.json()["error_description"]
        assert "staff" in {t["table"] for t in _tables(server.url, token)["tables"]}  # the right token works
    assert token in server.stderr  # printed on the first start ...
    with Server(ws) as again:
        assert _tables(again.url, token)["tables"]  # ... kept for the next ...
    assert token not in again.stderr and TOKEN_FILE in again.stderr  # ... and not printed again


def test_no_auth_must_be_asked_for(ws: Path) -> None:
    with Server(ws, "--no-auth") as server:
        answer = httpx2.post(server.url, json=INITIALIZE, headers=HEADERS, timeout=30)
        assert answer.status_code == 200
    assert not (ws / TOKEN_FILE).exists() and "without authentication" in server.stderr


def test_a_token_file_others_can_read_is_refused(ws: Path) -> None:
    token, created = load_or_create_token(ws)
    assert created and load_or_create_token(ws) == (token, False)
    (ws / TOKEN_FILE).chmod(0o644)
    with pytest.raises(ValueError, match="can be read by other users"):
        load_or_create_token(ws)
    (ws / TOKEN_FILE).unlink()
    (ws / TOKEN_FILE).symlink_to(ws / "warehouse.duckdb")
    with pytest.raises(ValueError, match="not a regular file"):
        load_or_create_token(ws)


def _service(ws: Path) -> DiaService:
    return DiaService(warehouse=str(ws / "warehouse.duckdb"), workspace=ws, privacy="samples", use_memory=False)


def test_run_sql_caps_bytes_as_well_as_rows(ws: Path) -> None:
    out = _service(ws).run_sql("SELECT repeat('x', 100000000) AS big")
    assert len(json.dumps(out)) < 1_100_000 and "cut" in out and "DIA_RESULT_BYTES" in out["cut"]
    assert out["rows"][0][0].startswith("xxx") and out["rows"][0][0].endswith("…")
    many = _service(ws).run_sql("SELECT repeat('y', 100000) AS wide FROM range(40)")
    assert 0 < many["shown"] < 40 and len(json.dumps(many)) < 1_100_000 and "of 40 rows shown" in many["cut"]


def test_run_sql_byte_cap_is_configurable(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIA_RESULT_BYTES", "5000")
    out = _service(ws).run_sql("SELECT repeat('z', 3000) AS a FROM range(10)")
    assert len(json.dumps(out["rows"])) <= 5000 and out["shown"] == 1


@pytest.mark.parametrize("rows", [
    [("é" * 2_000_000,)],  # two bytes a character
    [("\x00" * 1_000_000, "a")],  # six bytes a character once escaped
    [(list(range(500_000)),)],  # a list value
])
def test_the_byte_cap_holds_whatever_the_values(rows: list[tuple[Any, ...]]) -> None:
    from dia_assets.agents.query.tools import capped_rows

    kept, note = capped_rows(rows, 100_000)
    assert len(json.dumps(kept, ensure_ascii=False).encode()) <= 100_000 and note and len(kept) == 1


@pytest.mark.parametrize(("tool", "args", "field"), [
    ("lineage", {"target": "x" * 200_000}, "target"),
    ("run_sql", {"sql": "SELECT 1 " + "-" * 200_000}, "sql"),
    ("describe_table", {"name": "s" * 10_000}, "name"),
    ("ask", {"question": "why " * 10_000}, "question"),
    ("search_memory", {"query": "q" * 10_000}, "query"),
])
def test_oversized_inputs_get_a_clear_message(ws: Path, tool: str, args: dict[str, Any], field: str) -> None:
    with pytest.raises(ToolRefused) as err:
        getattr(_service(ws), tool)(**args)
    assert str(err.value).startswith(f"{field} is ") and f"at most {INPUT_LIMITS[field]:,}" in str(err.value)


def test_lineage_of_a_long_unknown_target_is_a_message(ws: Path) -> None:
    """Under the limit but longer than any file name: a message, not an OS error."""
    with pytest.raises(ToolRefused, match="no saved answer, table or SQL"):
        _service(ws).lineage("q" * 5_000)


def test_an_unexpected_failure_is_a_message_over_mcp(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dia_assets.cli.mcp_server import build_server

    svc = DiaService(warehouse=str(ws / "warehouse.duckdb"), workspace=ws, privacy="schema-only", use_memory=False)

    def broken() -> dict[str, Any]:
        raise OSError("cannot read 'O''QUOKKA' anywhere")

    monkeypatch.setattr(svc, "list_tables", broken)

    async def main() -> Any:
        async with Client(build_server(svc)) as client:
            return await client.call_tool("list_tables", {})
    result = anyio.run(main)
    text = result.content[0].text
    assert result.is_error and "broken failed: OSError: cannot read '…' anywhere" in text and "QUOKKA" not in text


def test_the_memory_store_keeps_the_workspace_and_its_parent_private(tmp_path: Path) -> None:
    """As root, pgserver widens every parent of its data folder; DIA keeps the data where
    that changes nothing (platform/memory/placement.py)."""
    from dia_assets.platform.memory import MemoryStore
    from tests.memory_fixtures import HashEmbedder

    parent = tmp_path / "private"
    parent.mkdir(mode=0o700)
    ws = parent / "ws"
    ws.mkdir(mode=0o700)
    store = MemoryStore.open(pgdata=ws / "pgdata", embedder=HashEmbedder())
    try:
        assert store.list_items() == []  # the server is up and answering
        modes = {p: stat.S_IMODE(p.stat().st_mode) for p in (parent, ws)}
        assert modes == {parent: 0o700, ws: 0o700}
        assert (ws / "pgdata" / "PG_VERSION").exists()  # the data folder is still reached through the workspace
    finally:
        store.close()
        store.target._embedded.stop()
