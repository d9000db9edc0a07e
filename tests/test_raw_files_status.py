"""`raw_files` as the UI shows it: asked through the same GraphQL the UI sends, the partitions of
reported files read materialized (100% filled, none missing), and each file's events carry its
path, size, sha256 and modification time. An observable source asset read "Missing (N)" beside N
observations, since open-source Dagster fills partitions from materializations only."""

from __future__ import annotations

from pathlib import Path

from dagster import instance_for_test
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.context import WorkspaceProcessContext
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster_graphql.test.utils import execute_dagster_graphql

from dia_assets.dagster.interpretation import RAW_FILES, record_raw_files
from dia_assets.platform.files.discover import content_hash

QUERY = """
query RawFiles {
  assetNodes(assetKeys: [{path: ["raw_files"]}]) {
    isObservable isMaterializable
    partitionStats { numMaterialized numPartitions numFailed numMaterializing }
    assetPartitionStatuses {
      ... on DefaultPartitionStatuses { materializedPartitions unmaterializedPartitions failedPartitions }
    }
  }
}"""


def _location(tmp_path: Path) -> InProcessWorkspaceLoadTarget:
    """The project's code location, loaded in process as `dagster dev` loads it."""
    (tmp_path / "workspace").mkdir()
    module = tmp_path / "location.py"
    module.write_text("from dia_assets.definitions import build_defs\n"
                      f"defs = build_defs({str(tmp_path / 'workspace')!r})\n")
    origin = LoadableTargetOrigin(python_file=str(module), attribute="defs", working_directory=str(tmp_path))
    return InProcessWorkspaceLoadTarget(InProcessCodeLocationOrigin(origin, location_name="dia"))


def _ui(process: WorkspaceProcessContext) -> dict:
    result = execute_dagster_graphql(process.create_request_context(), QUERY)
    assert not result.errors, result.errors
    [node] = result.data["assetNodes"]
    return node


def test_reported_files_fill_the_partitions_the_ui_shows(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "a.csv").write_text("id,name\n1,x\n")
    (data / "b.csv").write_text("id\n1\n2\n3\n")
    with instance_for_test() as instance, WorkspaceProcessContext(instance, _location(tmp_path)) as process:
        assert record_raw_files(instance, data) == 2  # what new_data_sensor and `make demo` report
        node = _ui(process)
        assert not node["isObservable"]  # no "Observe" verbs or observed-only status in the UI
        assert node["partitionStats"] == {"numMaterialized": 2, "numPartitions": 2, "numFailed": 0,
                                          "numMaterializing": 0}
        statuses = node["assetPartitionStatuses"]
        assert sorted(statuses["materializedPartitions"]) == ["a_csv", "b_csv"]
        assert statuses["unmaterializedPartitions"] == [] and statuses["failedPartitions"] == []
        # the events: path, size, hash, modification time, and the hash as data version
        latest = {e.partition: e for e in (
            instance.get_latest_data_version_record(RAW_FILES, False, key).asset_materialization
            for key in ("a_csv", "b_csv"))}
        for key, name in (("a_csv", "a.csv"), ("b_csv", "b.csv")):
            meta, path = latest[key].metadata, data / name
            assert meta["path"].value == str(path.resolve())
            assert meta["size_bytes"].value == path.stat().st_size
            assert meta["sha256"].value == content_hash(path) == latest[key].tags["dagster/data_version"]
            assert meta["modified"].value == path.stat().st_mtime
            observed = instance.get_latest_data_version_record(RAW_FILES, True, key).asset_observation
            assert observed.tags["dagster/data_version"] == content_hash(path)  # what staleness reads
        # a deleted file's partition goes (as new_data_sensor asks): nothing reads missing
        instance.delete_dynamic_partition("raw_files", "b_csv")
        node = _ui(process)
        assert node["partitionStats"]["numMaterialized"] == node["partitionStats"]["numPartitions"] == 1
        assert node["assetPartitionStatuses"]["unmaterializedPartitions"] == []
