"""Real Dagster runs: the interpretation asset and the raw-file observations."""

from __future__ import annotations

import json

from dagster import AssetKey, AutomationCondition, DagsterInstance, materialize

from dia_assets.contracts.interpretation import INTERPRETATION_VERSION
from dia_assets.dagster.interpretation import interpretation_asset, observe_folder, raw_file_assets
from dia_assets.dagster.resources import LLMResource, WorkspaceResource
from dia_assets.platform.files.discover import content_hash
from tests.conftest import EXAMPLES


def test_materialize_interpretation_on_example_data(tmp_path):
    data = EXAMPLES / "data"
    raws = raw_file_assets(str(data))
    asset = interpretation_asset([r.key for r in raws])
    instance = DagsterInstance.ephemeral()
    result = materialize(
        [asset, *raws], selection=[asset.key], instance=instance,
        resources={"workspace": WorkspaceResource(root=str(tmp_path), data_dir=str(data)), "llm": LLMResource(model=None)},
    )
    assert result.success
    written = json.loads((tmp_path / "interpretation.json").read_text())
    assert written["version"] == INTERPRETATION_VERSION and len(written["sources"]) == 6
    assert "# Data interpretation" in (tmp_path / "interpretation.md").read_text()
    meta = result.asset_materializations_for_node("interpretation")[0].metadata
    assert meta["sources"].value == 6 and meta["rows"].value == 14396
    assert "payroll.badge" in meta["foreign_keys_table"].value
    # every quality issue as a table row, not only a count
    issues = meta["quality_issues_table"].value.splitlines()
    assert issues[0].startswith("| source | column | kind |") and len(issues) == 2 + meta["quality_issues"].value
    assert any("| duplicate_rows |" in row for row in issues)
    schema = meta["column_schema/staff"].value
    assert [c.name for c in schema.columns][:2] == ["badge", "first_name"]
    assert any(e.message == "LLM enrichment skipped: DIA_MODEL is not set"
               for e in instance.all_logs(result.run_id) if e.message)


def test_raw_file_data_version_is_its_content_hash():
    versions = observe_folder(EXAMPLES / "data").data_versions_by_partition
    assert versions["staff_csv"].value == content_hash(EXAMPLES / "data" / "staff.csv")
    assert set(observe_folder(EXAMPLES / "data", {"staff_csv"}).data_versions_by_partition) == {"staff_csv"}


def test_definitions_load():
    from dia_assets.definitions import defs

    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert {"interpretation", "raw_files"} <= keys
    assert defs.resolve_asset_graph().get(AssetKey("raw_files")).partitions_def is not None


def test_validation_report_follows_the_warehouse_declaratively():
    from dia_assets.definitions import defs

    node = defs.resolve_asset_graph().get(AssetKey("validation_report"))
    assert node.automation_condition == AutomationCondition.eager()
