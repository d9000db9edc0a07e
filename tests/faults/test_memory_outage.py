"""Finding 6: a memory outage costs the lesson, never the verified answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

from dia_assets.agents.query import AgentSettings, StoreMemory, answer_question
from dia_assets.contracts.query_result import QueryResult
from dia_assets.platform.model.litellm import litellm_chat
from tests.memory_fixtures import db_url, hash_store, pg_server  # noqa: F401 - pytest fixtures
from tests.query_fixtures import FAKE_MODEL, build_tiny_duckdb, call, register_tools

Q = "How many staff are there in each role?"
CONTRACT = call("declare_contract", kind="analytical", columns=["role", "n"],
                granularity={"description": "role", "key_columns": ["role"]})
SQL = "SELECT role, COUNT(*) AS n FROM staff GROUP BY role"
LESSON = call("write_lesson", kind="aggregation", title="Count staff per role",
              rule="Group staff by role.", probe_sql="SELECT COUNT(*) > 0 FROM staff")


def _take_down(url: str, admin: str) -> Any:
    """A scripted step that stops the memory database just before the reflection call."""
    name = conninfo_to_dict(url)["dbname"]

    def step(messages: list[dict[str, Any]]) -> dict[str, Any]:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            con.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = %s AND pid <> pg_backend_pid()", (name,))
        return LESSON
    return step


def test_memory_down_at_reflection_keeps_the_verified_answer(
    tmp_path: Path, db_url: str, hash_store: Any, pg_server: dict[str, Any],  # noqa: F811
) -> None:
    wh = build_tiny_duckdb(tmp_path / "w.duckdb")
    admin = pg_server["server"].uri()
    register_tools([CONTRACT, call("submit", sql=SQL), _take_down(db_url, admin)])
    workspace = tmp_path / "ws"
    try:
        result, run = answer_question(Q, wh, chat=litellm_chat(FAKE_MODEL), workspace=workspace,
                                      memory=StoreMemory(hash_store, "db-test"),
                                      settings=AgentSettings(memory_refs=0))
    finally:
        name = conninfo_to_dict(db_url)["dbname"]
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    assert result.status == "answered" and result.lessons_written == []
    assert any("lesson not recorded" in w for w in result.warnings)
    folder = workspace / "queries" / result.question_id
    stored = QueryResult.read(folder / "result.json")
    assert stored.status == "answered" and stored.row_count == 3 and stored.warnings
    assert (folder / "result.parquet").exists() and (folder / "query.sql").exists()
    assert "lesson not recorded" in (folder / "answer.md").read_text()
    trace = json.loads((folder / "trace.json").read_text())
    assert [e for e in trace["events"] if e["event"] == "memory_unavailable"]


class _DownMemory:
    """A memory whose every call fails as a dead connection would."""

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise psycopg.OperationalError("connection refused")
        return fail


def test_memory_down_from_the_start_still_answers(tmp_path: Path) -> None:
    wh = build_tiny_duckdb(tmp_path / "w.duckdb")
    register_tools([CONTRACT, call("read_memory", id="7"), call("submit", sql=SQL), LESSON])
    result, run = answer_question(Q, wh, chat=litellm_chat(FAKE_MODEL), memory=_DownMemory(),  # type: ignore[arg-type]
                                  workspace=tmp_path / "ws")
    assert result.status == "answered" and (tmp_path / "ws" / "queries" / result.question_id / "result.json").exists()
    assert any("memory not consulted" in w for w in result.warnings)
    assert any("lesson not recorded" in w for w in result.warnings)


@pytest.mark.parametrize("status", ["answered"])
def test_warning_field_defaults_keep_old_results_readable(status: str) -> None:
    old = QueryResult(question_id="q", question="q", status=status).model_dump()
    old.pop("warnings"), old.pop("privacy")
    assert QueryResult.model_validate(old).warnings == []


def test_memory_down_at_catalog_refresh_does_not_fail_the_build(
    tmp_path: Path, db_url: str, pg_server: dict[str, Any], example_interpretation: Any,  # noqa: F811
) -> None:
    """The warehouse is built; the catalog step records that it could not refresh (metadata
    and a failing WARN check) and the run succeeds. With memory back, it refreshes."""
    import dagster as dg
    from dagster_duckdb import DuckDBResource

    from dia_assets.agents.schema_creator.plan import plan_manifest
    from dia_assets.dagster.catalog import semantic_catalog
    from dia_assets.dagster.resources.embeddings import EmbeddingsResource
    from dia_assets.dagster.resources.memory import MemoryResource
    from dia_assets.dagster.resources.workspace import WorkspaceResource

    ws = tmp_path / "ws"
    example_interpretation.write(ws / "interpretation.json")
    plan_manifest(example_interpretation).write(ws / "schema" / "manifest.json")
    embeddings = EmbeddingsResource(model="wordllama")

    def run() -> Any:
        return dg.materialize([semantic_catalog], raise_on_error=False, resources={
            "memory": MemoryResource(embeddings=embeddings, url=db_url), "embeddings": embeddings,
            "workspace": WorkspaceResource(root=str(ws)),
            "duckdb": DuckDBResource(database=str(ws / "warehouse.duckdb"))})

    admin, name = pg_server["server"].uri(), conninfo_to_dict(db_url)["dbname"]
    with psycopg.connect(admin, autocommit=True) as con:
        con.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        con.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
    try:
        down = run()
    finally:
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    assert down.success
    meta = down.asset_materializations_for_node("semantic_catalog")[0].metadata
    assert meta["refreshed"].value is False and "shared memory unavailable" in meta["error"].value
    (check,) = down.get_asset_check_evaluations()
    assert check.check_name == "catalog_refreshed" and not check.passed
    assert check.severity == dg.AssetCheckSeverity.WARN
    assert not (ws / "catalog" / "semantic_catalog.json").exists()

    back = run()
    assert back.success
    assert back.asset_materializations_for_node("semantic_catalog")[0].metadata["refreshed"].value is True
    (check,) = back.get_asset_check_evaluations()
    assert check.passed and (ws / "catalog" / "semantic_catalog.json").exists()


def test_catalog_inputs_missing_still_fails_the_step(tmp_path: Path, db_url: str) -> None:  # noqa: F811
    """Only a memory outage is tolerated: a workspace without a build is a real error."""
    import dagster as dg
    from dagster_duckdb import DuckDBResource

    from dia_assets.dagster.catalog import semantic_catalog
    from dia_assets.dagster.resources.embeddings import EmbeddingsResource
    from dia_assets.dagster.resources.memory import MemoryResource
    from dia_assets.dagster.resources.workspace import WorkspaceResource

    embeddings = EmbeddingsResource(model="wordllama")
    result = dg.materialize([semantic_catalog], raise_on_error=False, resources={
        "memory": MemoryResource(embeddings=embeddings, url=db_url), "embeddings": embeddings,
        "workspace": WorkspaceResource(root=str(tmp_path)),
        "duckdb": DuckDBResource(database=str(tmp_path / "warehouse.duckdb"))})
    assert not result.success
