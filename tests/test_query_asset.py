"""The `query_result` asset: dynamic partitions per question, materialized in Dagster."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterInstance, build_sensor_context, materialize

from dia_assets.dagster.query import (
    QUERY_RESULT_KEY,
    QUESTIONS,
    query_result_asset,
    question_partitions_sensor,
    register_question_partitions,
)
from dia_assets.dagster.resources import LLMResource, WorkspaceResource
from tests.memory_fixtures import db_url, pg_server  # noqa: F401 - pytest fixtures
from tests.query_fixtures import FAKE_MODEL, build_example_warehouse, call, register_tools

QUESTIONS_YAML = """
- id: staff_count_per_role
  question: How many staff members do we have in each role?
- id: beds_per_department
  question: How many beds does each department have across all of its wards?
"""


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "ws"
    build_example_warehouse(root / "warehouse.duckdb")
    questions = tmp_path / "questions.yaml"
    questions.write_text(QUESTIONS_YAML)
    monkeypatch.setenv("DIA_QUESTIONS", str(questions))
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    monkeypatch.delenv("DIA_MODEL", raising=False)
    return root


def _materialize(asset, instance, key, root, model, raise_on_error=True):  # noqa: ANN001, ANN202
    return materialize(
        [asset], instance=instance, partition_key=key, raise_on_error=raise_on_error,
        resources={"workspace": WorkspaceResource(root=str(root)), "llm": LLMResource(model=model)},
    )


def test_partitions_are_registered_and_materialized(ws: Path, tmp_path: Path) -> None:
    instance = DagsterInstance.ephemeral()
    assert register_question_partitions(instance) == ["staff_count_per_role", "beds_per_department"]
    assert register_question_partitions(instance) == []
    asset = query_result_asset(with_memory=False)

    register_tools([
        call("declare_contract", kind="analytical", columns=["role", "staff_count"],
             granularity={"description": "role", "key_columns": ["role"]}),
        call("submit", sql="SELECT role, COUNT(*) AS staff_count FROM staff GROUP BY role"),
    ])
    result = _materialize(asset, instance, "staff_count_per_role", ws, FAKE_MODEL)
    assert result.success
    meta = result.asset_materializations_for_node("query_result")[0].metadata
    assert meta["status"].value == "answered" and meta["dagster/row_count"].value == 9
    [answered] = result.get_asset_check_evaluations()
    assert answered.check_name == "answered" and answered.passed
    assert meta["verification_passed"].value is True and meta["attempts"].value == 1
    assert "SELECT role" in meta["sql"].value and "Registered Nurse" in meta["preview"].value
    assert meta["total_tokens"].value > 0 and meta["cost_usd"].value > 0
    assert [c.name for c in meta["dagster/column_schema"].value.columns] == ["role", "staff_count"]
    lineage = meta["dagster/column_lineage"].value.deps_by_column
    assert [(d.asset_key.to_user_string(), d.column_name) for d in lineage["role"]] == [("warehouse/staff", "role")]
    folder = ws / "queries" / "staff_count_per_role"
    assert {p.name for p in folder.iterdir()} >= {"query.sql", "result.parquet", "trace.json", "answer.md"}

    register_tools([
        call("declare_contract", kind="analytical", columns=["department_code", "beds"],
             granularity={"description": "department", "key_columns": ["department_code"]}),
        call("submit", sql="SELECT department_code, SUM(beds) AS beds FROM hospital_wards GROUP BY department_code"),
    ])
    assert _materialize(asset, instance, "beds_per_department", ws, FAKE_MODEL).success
    assert (ws / "queries" / "beds_per_department" / "result.parquet").exists()

    # a new question becomes a new partition
    questions = Path(__import__("os").environ["DIA_QUESTIONS"])
    questions.write_text(QUESTIONS_YAML + "- id: payroll_total_per_month\n  question: What was the total gross pay in each payroll month?\n")
    assert register_question_partitions(instance) == ["payroll_total_per_month"]
    assert len(instance.get_dynamic_partitions(QUESTIONS.name)) == 3


def test_without_a_model_the_partition_is_not_materialized_and_the_run_fails(ws: Path) -> None:
    instance = DagsterInstance.ephemeral()
    register_question_partitions(instance)
    result = _materialize(query_result_asset(with_memory=False), instance, "staff_count_per_role", ws, None,
                          raise_on_error=False)
    # an unanswered question is not a success: no materialization, a failed run that says why
    assert not result.success
    assert instance.get_materialized_partitions(QUERY_RESULT_KEY) == set()
    # events logged per question are written to the instance as they happen (the in-process
    # result only lists the events of a step that returned)
    events = [e.dagster_event for e in instance.all_logs(result.run_id) if e.dagster_event]
    [observation] = [e.event_specific_data.asset_observation for e in events if e.event_type_value == "ASSET_OBSERVATION"]
    assert observation.partition == "staff_count_per_role"
    assert observation.metadata["status"].value == "no_model" and "DIA_MODEL" in observation.metadata["message"].value
    # its `answered` check fails and says why, on that partition
    [answered] = [e.event_specific_data for e in events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert answered.check_name == "answered" and not answered.passed and answered.partition == "staff_count_per_role"
    assert answered.description.startswith("no_model: ") and "DIA_MODEL" in answered.description
    assert "No model is configured" in (ws / "queries" / "staff_count_per_role" / "answer.md").read_text()
    failure = next(e for e in result.all_events if e.event_type_value == "STEP_FAILURE")
    assert "1 of 1 question(s) not answered" in failure.step_failure_data.error.message
    assert any(e.message and "DIA_MODEL" in e.message for e in instance.all_logs(result.run_id))


def test_sensor_registers_new_questions(ws: Path) -> None:
    instance = DagsterInstance.ephemeral()
    out = question_partitions_sensor(build_sensor_context(instance=instance))
    assert out.dynamic_partitions_requests[0].partition_keys == ["staff_count_per_role", "beds_per_department"]
    assert out.run_requests == []  # no model configured: register only


def test_asset_with_memory_requires_the_memory_resource() -> None:
    asset = query_result_asset()
    assert {"memory", "llm", "workspace"} <= set(asset.required_resource_keys)
    assert asset.partitions_def == QUESTIONS


def _defs(with_model: bool):  # noqa: ANN202
    from dagster import Definitions

    from dia_assets.dagster.query import query_job

    return Definitions(assets=[query_result_asset(deps=[], with_memory=False)], jobs=[query_job],
                       resources={"workspace": WorkspaceResource(), "llm": LLMResource()})


def test_demo_step_answers_every_question(ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from dia_assets.dagster.query import demo_questions_step

    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    monkeypatch.setenv("DIA_MODEL", FAKE_MODEL)
    register_tools([
        call("declare_contract", kind="analytical", columns=["role", "staff_count"],
             granularity={"description": "role", "key_columns": ["role"]}),
        call("submit", sql="SELECT role, COUNT(*) AS staff_count FROM staff GROUP BY role"),
        "no lesson",
        call("declare_contract", kind="analytical", columns=["department_code", "beds"],
             granularity={"description": "department", "key_columns": ["department_code"]}),
        call("submit", sql="SELECT department_code, SUM(beds) AS beds FROM hospital_wards GROUP BY department_code"),
    ])
    instance = DagsterInstance.ephemeral()
    assert demo_questions_step(_defs(True), instance, ws, lambda m: None)
    out = capsys.readouterr().out
    assert "staff_count_per_role: answered, 9 rows" in out and "beds_per_department: answered, 12 rows" in out


def test_demo_step_without_a_model(ws: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    from dia_assets.dagster.query import demo_questions_step

    instance = DagsterInstance.ephemeral()
    assert demo_questions_step(_defs(False), instance, ws, lambda m: None)
    out = capsys.readouterr().out
    assert "2 questions registered" in out and "No model is configured" in out
    assert len(instance.get_dynamic_partitions(QUESTIONS.name)) == 2


def test_asset_with_the_shared_memory_store(ws: Path, db_url: str) -> None:  # noqa: F811
    from dia_assets.dagster.resources.embeddings import EmbeddingsResource
    from dia_assets.dagster.resources.memory import MemoryResource
    from dia_assets.platform.memory import MemoryStore, database_fingerprint

    instance = DagsterInstance.ephemeral()
    register_question_partitions(instance)
    register_tools([
        call("declare_contract", kind="analytical", columns=["role", "staff_count"],
             granularity={"description": "role", "key_columns": ["role"]}),
        call("submit", sql="SELECT role, COUNT(*) AS staff_count FROM staff GROUP BY role"),
        call("write_lesson", kind="grounding", title="Roles are stored in canonical spelling in staff.role",
             rule="Group by staff.role directly; spellings are already canonical.",
             probe_sql="SELECT COUNT(DISTINCT role) < 12 FROM staff"),
    ])
    result = materialize(
        [query_result_asset(deps=[])], instance=instance, partition_key="staff_count_per_role",
        resources={"workspace": WorkspaceResource(root=str(ws)), "llm": LLMResource(model=FAKE_MODEL),
                   "memory": MemoryResource(url=db_url, embeddings=EmbeddingsResource())},
    )
    assert result.success
    meta = result.asset_materializations_for_node("query_result")[0].metadata
    assert meta["status"].value == "answered" and meta["lessons_written"].value == 1
    store = MemoryStore.open(url=db_url)
    try:
        items = store.list_items()
        assert [(i.tier, i.kind) for i in items] == [("session", "grounding")]
        assert items[0].scope == database_fingerprint(ws / "warehouse.duckdb")
    finally:
        store.close()


def test_a_follow_up_partition_builds_on_the_question_it_follows(ws: Path, tmp_path: Path) -> None:
    import os

    Path(os.environ["DIA_QUESTIONS"]).write_text(QUESTIONS_YAML + (
        "- id: big_roles\n  question: Only the roles with more than 40 staff.\n  follows: staff_count_per_role\n"))
    instance = DagsterInstance.ephemeral()
    register_question_partitions(instance)
    asset = query_result_asset(deps=[], with_memory=False)
    contract = call("declare_contract", kind="analytical", columns=["role", "staff_count"],
                    granularity={"description": "role", "key_columns": ["role"]})
    register_tools([contract, call("submit", sql="SELECT 1 AS x")])  # wrong: the follow-up waits for its base
    assert not _materialize(asset, instance, "big_roles", ws, FAKE_MODEL, raise_on_error=False).success
    register_tools([contract, call("submit", sql="SELECT role, COUNT(*) AS staff_count FROM staff GROUP BY role")])
    assert _materialize(asset, instance, "staff_count_per_role", ws, FAKE_MODEL).success
    register_tools([contract, call("submit", sql="SELECT role, staff_count FROM previous WHERE staff_count > 40")])
    result = _materialize(asset, instance, "big_roles", ws, FAKE_MODEL)
    assert result.success
    meta = result.asset_materializations_for_node("query_result")[0].metadata
    assert meta["dagster/row_count"].value == 3 and "WITH previous AS" in meta["sql"].value


def test_a_fresh_memory_replan_holds_back_the_lessons_the_failed_answer_used(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The quality sensor's `dia/fresh_memory` tag is read: the re-answer recalls no lesson the
    previous (failed) answer of that question used."""
    import json

    from dia_assets.agents.query.memory import InMemoryMemory, Item
    from dia_assets.dagster import query as query_assets

    memory = InMemoryMemory([
        Item("m1", "Staff per role counts every row", "rule one", "SELECT TRUE", "aggregation", "session"),
        Item("m2", "Staff per role counts distinct badges", "rule two", "SELECT TRUE", "aggregation", "session"),
    ])
    monkeypatch.setattr(query_assets, "_memory", lambda context, resource, warehouse: memory)
    folder = ws / "queries" / "staff_count_per_role"
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps(
        {"memory_used": [{"id": "m1", "title": "Staff per role counts every row", "verified": True}]}))
    instance = DagsterInstance.ephemeral()
    register_question_partitions(instance)
    asset = query_result_asset(with_memory=False)
    script = [
        call("declare_contract", kind="analytical", columns=["role", "staff_count"],
             granularity={"description": "role", "key_columns": ["role"]}),
        call("recall", query="staff per role"),
        call("submit", sql="SELECT role, COUNT(DISTINCT badge) AS staff_count FROM staff GROUP BY role"),
    ]
    recalled = {}
    for tags in ({"dia/fresh_memory": "true"}, {}):
        register_tools(list(script))
        result = materialize([asset], instance=instance, partition_key="staff_count_per_role", tags=tags,
                             resources={"workspace": WorkspaceResource(root=str(ws)),
                                        "llm": LLMResource(model=FAKE_MODEL)})
        assert result.success
        trace = json.loads((folder / "trace.json").read_text())
        recalled[bool(tags)] = {r["id"] for e in trace["events"] if e["event"] == "recall" for r in e["refs"]}
        (folder / "result.json").write_text(json.dumps(  # the next run again follows an answer that used m1
            {"memory_used": [{"id": "m1", "title": "t", "verified": True}]}))
    assert "m1" not in recalled[True] and "m2" in recalled[True]
    assert "m1" in recalled[False]  # without the tag, memory is recalled as usual
