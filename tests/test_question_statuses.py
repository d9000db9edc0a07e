"""Issue #31, honest statuses: a question partition is materialized only when its question was
answered, and a backfill answers every question in one run (`BackfillPolicy.single_run()`).

Real Dagster: an instance with a real asset backfill driven by the backfill daemon's own
iteration (runs launched in process), the example warehouse in DuckDB, and the scripted model
of tests/query_fixtures.py answering two of three questions."""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetKey, AssetRecordsFilter, DagsterInstance, DagsterRunStatus, materialize
from dagster._core.execution.backfill import BulkActionStatus, PartitionBackfill
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)
from dagster._core.test_utils import create_test_daemon_workspace_context, instance_for_test
from dagster._core.workspace.load_target import ModuleTarget
from dagster._daemon.backfill import execute_backfill_iteration

from dia_assets.dagster.query import (
    QUERY_RESULT_KEY,
    query_result_asset,
    register_question_partitions,
)
from dia_assets.dagster.resources import LLMResource, WorkspaceResource
from tests.query_fixtures import FAKE_MODEL, build_example_warehouse, call, register_tools

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS_YAML = """
- id: staff_count_per_role
  question: How many staff members do we have in each role?
- id: beds_per_department
  question: How many beds does each department have across all of its wards?
- id: payroll_total_per_month
  question: What was the total gross pay in each payroll month?
"""
KEYS = ["staff_count_per_role", "beds_per_department", "payroll_total_per_month"]
STAFF = [call("declare_contract", kind="analytical", columns=["role", "staff_count"],
              granularity={"description": "role", "key_columns": ["role"]}),
         call("submit", sql="SELECT role, COUNT(*) AS staff_count FROM staff GROUP BY role")]
BEDS = [call("declare_contract", kind="analytical", columns=["department_code", "beds"],
             granularity={"description": "department", "key_columns": ["department_code"]}),
        call("submit", sql="SELECT department_code, SUM(beds) AS beds FROM hospital_wards GROUP BY department_code")]
# the third question gets no tool call, only text, until its turns run out: not answered
SCRIPT = [*STAFF, "no lesson", *BEDS, "no lesson"]
RUN_CONFIG = {"ops": {"query_result": {"config": {"max_turns": 3}}}}
COMPARED = ["status", "sql", "dagster/row_count", "preview", "verification_passed", "attempts", "contract"]


def _workspace(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / name
    build_example_warehouse(root / "warehouse.duckdb")
    monkeypatch.setenv("DIA_WORKSPACE", str(root))
    return root


@pytest.fixture
def questions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "questions.yaml"
    path.write_text(QUESTIONS_YAML)
    monkeypatch.setenv("DIA_QUESTIONS", str(path))
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    monkeypatch.delenv("DIA_MODEL", raising=False)
    return path


def _events(instance: DagsterInstance, run_id: str, kind: str) -> list[Any]:
    return [e.dagster_event.event_specific_data for e in instance.all_logs(run_id)
            if e.dagster_event and e.dagster_event.event_type_value == kind]


def _latest_metadata(instance: DagsterInstance, key: str) -> dict[str, Any]:
    records = instance.fetch_materializations(AssetRecordsFilter(QUERY_RESULT_KEY, asset_partitions=[key]), limit=1)
    [record] = records.records
    return {k: v.value for k, v in record.asset_materialization.metadata.items() if k in COMPARED}


def _range_run(instance: DagsterInstance, root: Path, model: str | None) -> Any:
    """What a single-run backfill launches: one run over the whole range of question keys."""
    return materialize([query_result_asset(deps=[], with_memory=False)], instance=instance, raise_on_error=False,
                       run_config=RUN_CONFIG,
                       tags={ASSET_PARTITION_RANGE_START_TAG: KEYS[0], ASSET_PARTITION_RANGE_END_TAG: KEYS[-1]},
                       resources={"workspace": WorkspaceResource(root=str(root)), "llm": LLMResource(model=model)})


def test_one_run_over_three_questions_materializes_exactly_the_two_answered(questions, tmp_path, monkeypatch):
    # per-partition runs, one question each: the reference results
    single_root = _workspace(tmp_path, "single", monkeypatch)
    single = DagsterInstance.ephemeral()
    register_question_partitions(single)
    for key, script in (("staff_count_per_role", STAFF), ("beds_per_department", BEDS)):
        register_tools(list(script))
        assert materialize([query_result_asset(deps=[], with_memory=False)], instance=single, partition_key=key,
                           run_config=RUN_CONFIG, resources={"workspace": WorkspaceResource(root=str(single_root)),
                                                             "llm": LLMResource(model=FAKE_MODEL)}).success

    ranged_root = _workspace(tmp_path, "ranged", monkeypatch)
    instance = DagsterInstance.ephemeral()
    register_question_partitions(instance)
    register_tools(list(SCRIPT))
    run = _range_run(instance, ranged_root, FAKE_MODEL)

    assert not run.success  # not green: one question has no answer
    assert instance.get_materialized_partitions(QUERY_RESULT_KEY) == {"staff_count_per_role", "beds_per_department"}
    for key in ("staff_count_per_role", "beds_per_department"):
        assert _latest_metadata(instance, key) == _latest_metadata(single, key)
    assert _latest_metadata(instance, "staff_count_per_role")["dagster/row_count"] == 9
    checks = {c.partition: c.passed for c in _events(instance, run.run_id, "ASSET_CHECK_EVALUATION")}
    assert checks == {"staff_count_per_role": True, "beds_per_department": True, "payroll_total_per_month": False}
    [observed] = _events(instance, run.run_id, "ASSET_OBSERVATION")
    assert observed.asset_observation.partition == "payroll_total_per_month"
    assert observed.asset_observation.metadata["status"].value == "failed"
    [failure] = _events(instance, run.run_id, "STEP_FAILURE")
    assert "1 of 3 question(s) not answered" in failure.error.message and "payroll_total_per_month" in failure.error.message
    assert (ranged_root / "queries" / "payroll_total_per_month" / "answer.md").exists()


def test_without_a_model_no_question_partition_is_materialized(questions, tmp_path, monkeypatch):
    root = _workspace(tmp_path, "ws", monkeypatch)
    instance = DagsterInstance.ephemeral()
    register_question_partitions(instance)
    run = _range_run(instance, root, None)
    assert not run.success
    assert instance.get_materialized_partitions(QUERY_RESULT_KEY) == set()
    observed = {o.asset_observation.partition: o.asset_observation.metadata["status"].value
                for o in _events(instance, run.run_id, "ASSET_OBSERVATION")}
    assert observed == dict.fromkeys(KEYS, "no_model")
    assert not any(c.passed for c in _events(instance, run.run_id, "ASSET_CHECK_EVALUATION"))
    assert all((root / "queries" / k / "answer.md").exists() for k in KEYS)


def _backfill(instance: DagsterInstance, context: Any) -> PartitionBackfill:
    """A real asset backfill of every partition of every asset, as *Materialize all* launches,
    driven to its end by the backfill daemon's iteration (runs execute in this process)."""
    graph = context.create_request_context().asset_graph
    keys = [AssetKey("query_result"), AssetKey("beside_answers"), AssetKey("after_answers")]
    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id="statuses", asset_graph=graph, partition_names=None, asset_selection=keys,
        backfill_timestamp=time.time(), tags={}, dynamic_partitions_store=instance, all_partitions=True,
        title=None, description=None, run_config=RUN_CONFIG)
    instance.add_backfill(backfill)
    for _ in range(20):
        list(execute_backfill_iteration(context, logging.getLogger("backfill")))
        backfill = instance.get_backfill("statuses")
        if backfill.status != BulkActionStatus.REQUESTED:
            break
    return backfill


@pytest.mark.parametrize("model", [FAKE_MODEL, None])
def test_a_backfill_answers_every_question_in_one_run(questions, tmp_path, monkeypatch, model):
    root = _workspace(tmp_path, "ws", monkeypatch)
    if model:
        monkeypatch.setenv("STATUSES_TEST_MODEL", model)
        register_tools(list(SCRIPT))
    monkeypatch.delitem(sys.modules, "tests.statuses_location", raising=False)  # its resources read the model at import
    launcher = {"module": "dagster._core.launcher.sync_in_memory_run_launcher", "class": "SyncInMemoryRunLauncher"}
    coordinator = {"module": "dagster._core.run_coordinator", "class": "DefaultRunCoordinator"}
    with instance_for_test(overrides={"run_launcher": launcher, "run_coordinator": coordinator}) as instance:
        register_question_partitions(instance)
        target = ModuleTarget(module_name="tests.statuses_location", attribute="defs", working_directory=str(ROOT),
                              location_name="statuses")
        with create_test_daemon_workspace_context(target, instance) as context:
            backfill = _backfill(instance, context)
        runs = instance.get_runs()
        question_runs = [r for r in runs if QUERY_RESULT_KEY in (r.asset_selection or set())]
        assert len(question_runs) == 1  # one run for all three questions
        assert question_runs[0].tags[ASSET_PARTITION_RANGE_START_TAG] == KEYS[0]
        assert question_runs[0].status == DagsterRunStatus.FAILURE
        assert backfill.status == BulkActionStatus.COMPLETED_FAILED  # not "Succeeded"
        answered = {"staff_count_per_role", "beds_per_department"} if model else set()
        assert instance.get_materialized_partitions(QUERY_RESULT_KEY) == answered
        data = backfill.asset_backfill_data
        done = data.materialized_subset
        assert set(done.get_partitions_subset(QUERY_RESULT_KEY).get_partition_keys()
                   if QUERY_RESULT_KEY in done.asset_keys else []) == answered
        failed = set(data.failed_and_downstream_subset.get_partitions_subset(QUERY_RESULT_KEY).get_partition_keys())
        assert failed == set(KEYS) - answered
        # everything that does not read the unanswered question still ran
        assert instance.get_latest_materialization_event(AssetKey("beside_answers")) is not None
        assert AssetKey("after_answers") in data.failed_and_downstream_subset.non_partitioned_asset_keys
        assert len(runs) == 2, [(r.asset_selection, r.status) for r in runs]
        assert (root / "queries" / "payroll_total_per_month" / "answer.md").exists()


def test_an_unordered_result_is_previewed_in_one_order_and_an_ordered_one_as_returned():
    from dia_assets.agents.query.loop import shown_rows

    rows = [("EMER", 49), ("CARD", 66), ("ICU", 24)]
    unordered = "SELECT department_code, SUM(beds) FROM hospital_wards GROUP BY department_code"
    previews = {tuple(map(tuple, shown_rows(unordered, "duckdb", order, 2)))
                for order in (rows, rows[::-1], rows[1:] + rows[:1])}
    assert previews == {(("CARD", 66), ("EMER", 49))}
    ordered = unordered + " ORDER BY 2"
    assert shown_rows(ordered, "duckdb", rows[::-1], 3) == [["ICU", 24], ["CARD", 66], ["EMER", 49]]
