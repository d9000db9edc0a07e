"""Issue #13: "Materialize all" on the whole graph launches in one click.

Dagster 1.13's dialog (LaunchAssetExecutionButton.tsx / LaunchAssetChoosePartitionsDialog.tsx)
opens with an empty selection and a disabled *Launch backfill* when every partitioned asset of
the selection shares one partitions definition, static or dynamic (`defaultSelection: 'empty'`);
when they differ and no root of the selection is partitioned it takes its `pureAll` path:
"All partitions", button enabled, a backfill of every partition. These tests check, without a
browser, that our graph takes that path and that each question still reaches both assets."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import (
    DagsterInstance,
    DynamicPartitionsDefinition,
    StaticPartitionsDefinition,
    build_sensor_context,
)

from dia_assets.dagster.query import question_partitions_sensor

NO_WORKSPACE = Path(__file__).parent / "snapshots" / "no_workspace"
QUESTIONS_YAML = """
- id: staff_count_per_role
  question: How many staff members do we have in each role?
- id: beds_per_department
  question: How many beds does each department have across all of its wards?
"""


@pytest.fixture
def questions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "questions.yaml"
    path.write_text(QUESTIONS_YAML)
    monkeypatch.setenv("DIA_QUESTIONS", str(path))
    monkeypatch.delenv("DIA_MODEL", raising=False)
    return path


def _ui_target(graph) -> str:  # noqa: ANN001
    """The dialog target Dagster's UI picks for "Materialize all" (every materializable asset):
    'job' (empty default selection, button disabled), 'anchor' or 'pureAll' (all partitions)."""
    selected = {k for k in graph.get_all_asset_keys() if graph.get(k).is_materializable}
    described = {k: str(graph.get(k).partitions_def) for k in selected if graph.get(k).partitions_def}
    if len(set(described.values())) <= 1:
        return "job"  # one common job (__ASSET_JOB) and one partition space
    roots = [k for k in selected if not (set(graph.get(k).parent_keys) & selected)]
    return "anchor" if any(k in described for k in roots) else "pureAll"


@pytest.mark.parametrize("workspace", ["before_build", "after_build"])
def test_materialize_all_preselects_every_partition(questions: Path, workspace: str, tmp_path: Path,
                                                   example_interpretation, monkeypatch) -> None:  # noqa: ANN001
    from dia_assets.agents.schema_creator.build import write_plan
    from dia_assets.definitions import build_defs

    root = NO_WORKSPACE
    if workspace == "after_build":  # per-table assets from a manifest, as after `make demo`
        monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
        root = tmp_path / "ws"
        write_plan(example_interpretation, root)
    graph = build_defs(root).resolve_asset_graph()
    if workspace == "after_build":
        assert any(k.path[0] == "warehouse" and len(k.path) == 2 for k in graph.get_all_asset_keys())
    assert _ui_target(graph) == "pureAll"
    # the two question assets are where the definitions differ, and both cover every question
    query_def = graph.get(_key("query_result")).partitions_def
    analysis_def = graph.get(_key("analysis_result")).partitions_def
    assert isinstance(query_def, DynamicPartitionsDefinition) and query_def.name == "questions"
    assert isinstance(analysis_def, StaticPartitionsDefinition)
    assert analysis_def.get_partition_keys() == ["staff_count_per_role", "beds_per_department"]


def test_ui_target_rule_sees_a_shared_partition_space() -> None:
    """The rule above is not vacuous: one shared definition is the 'job' path (0 partitions)."""
    from dagster import Definitions, asset

    shared = DynamicPartitionsDefinition(name="questions")

    @asset
    def upstream() -> None: ...

    @asset(partitions_def=shared, deps=[upstream])
    def a() -> None: ...

    @asset(partitions_def=shared, deps=[upstream])
    def b() -> None: ...

    graph = Definitions(assets=[upstream, a, b]).resolve_asset_graph()
    assert _ui_target(graph) == "job"


def test_a_new_question_reaches_query_result_now_and_analysis_result_on_reload(questions: Path) -> None:
    from dia_assets.definitions import build_defs

    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("questions", ["staff_count_per_role", "beds_per_department"])
    before = build_defs(NO_WORKSPACE).resolve_asset_graph()
    questions.write_text(QUESTIONS_YAML + "- id: payroll_total_per_month\n  question: Total gross pay per month?\n")

    out = question_partitions_sensor(build_sensor_context(instance=instance))
    assert out.dynamic_partitions_requests[0].partition_keys == ["payroll_total_per_month"]
    # analysis_result's keys were read when the code location loaded: a reload picks it up
    assert "payroll_total_per_month" not in before.get(_key("analysis_result")).partitions_def.get_partition_keys()
    after = build_defs(NO_WORKSPACE).resolve_asset_graph()
    assert "payroll_total_per_month" in after.get(_key("analysis_result")).partitions_def.get_partition_keys()


def _key(name: str):  # noqa: ANN202
    from dagster import AssetKey

    return AssetKey(name)
