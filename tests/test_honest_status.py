"""Statuses that tell the truth in the UI: no rebuild on first start of what is built, and
data versions that stay put while a file does not change (nothing reads Unsynced)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import AssetKey, DagsterInstance, SensorResult, build_sensor_context, materialize
from dagster._core.definitions.data_version import StaleStatus

from dia_assets.agents.interpreter.run import interpret_to_files
from dia_assets.dagster.interpretation import (
    interpretation_asset,
    raw_file_assets,
    record_raw_files,
)
from dia_assets.dagster.resources import LLMResource, WorkspaceResource
from dia_assets.dagster.sensors.data_sensors import new_data_sensor


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    data, ws = tmp_path / "data", tmp_path / "ws"
    data.mkdir()
    (data / "a.csv").write_text("id,name\n1,x\n2,y\n")
    monkeypatch.setenv("DIA_DATA_DIR", str(data))
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    monkeypatch.setenv("DIA_SETTLE_S", "0")
    return data, ws


def test_first_start_does_not_rebuild_what_is_built_but_does_after_a_change(env):
    data, ws = env
    interpret_to_files(data, ws / "interpretation.json", ws / "interpretation.md")  # what a build leaves
    instance = DagsterInstance.ephemeral()
    first = new_data_sensor(build_sensor_context(instance=instance))  # no cursor: the sensor's first tick
    assert isinstance(first, SensorResult) and not first.run_requests
    assert first.cursor  # it remembers the folder from now on
    # a real change while the sensor was off: its first tick rebuilds
    (data / "a.csv").write_text("id,name\n1,x\n2,z\n")
    changed = new_data_sensor(build_sensor_context(instance=DagsterInstance.ephemeral()))
    assert len(changed.run_requests) == 1 and changed.run_requests[0].tags["dia/change"] == "changed: a.csv"
    # without any interpretation the folder is new: build it
    (ws / "interpretation.json").unlink()
    fresh = new_data_sensor(build_sensor_context(instance=DagsterInstance.ephemeral()))
    assert fresh.run_requests[0].tags["dia/change"] == "added: a.csv"


def _status(instance: DagsterInstance, assets: list, key: str) -> StaleStatus:  # noqa: ANN001
    """The status the UI shows (Dagster's own resolver, as its test utilities build it)."""
    from dagster._utils.test.data_versions import get_stale_status_resolver

    return get_stale_status_resolver(instance, assets).get_status(AssetKey(key))


def test_an_unchanged_file_observed_again_leaves_the_interpretation_in_sync(env):
    data, ws = env
    instance = DagsterInstance.ephemeral()
    raws = raw_file_assets(str(data))
    assets = [*raws, interpretation_asset([r.key for r in raws])]
    assert record_raw_files(instance, data) == 1
    result = materialize(assets[1:], instance=instance, resources={
        "workspace": WorkspaceResource(root=str(ws), data_dir=str(data)), "llm": LLMResource(model=None)})
    assert result.success
    version = result.asset_materializations_for_node("interpretation")[0].tags["dagster/data_version"]
    assert _status(instance, assets, "interpretation") == StaleStatus.FRESH
    record_raw_files(instance, data)  # observed again, file unchanged: same data version
    assert _status(instance, assets, "interpretation") == StaleStatus.FRESH
    again = materialize(assets[1:], instance=instance, resources={
        "workspace": WorkspaceResource(root=str(ws), data_dir=str(data)), "llm": LLMResource(model=None)})
    assert again.asset_materializations_for_node("interpretation")[0].tags["dagster/data_version"] == version
    (data / "a.csv").write_text("id,name\n1,x\n2,changed\n")
    record_raw_files(instance, data)  # a real change is new data
    assert _status(instance, assets, "interpretation") == StaleStatus.STALE
