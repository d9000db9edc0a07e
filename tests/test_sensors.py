"""Sensors evaluated against a real (ephemeral) Dagster instance."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from dagster import (
    AssetMaterialization,
    DagsterInstance,
    DagsterRunStatus,
    SensorResult,
    SkipReason,
    build_sensor_context,
)
from dagster._core.test_utils import create_run_for_test

from dia_assets.agents.interpreter.run import interpret_to_files
from dia_assets.dagster.sensors.data_sensors import new_data_sensor, review_gate_sensor
from dia_assets.dagster.sensors.drift_sensor import drift_sensor
from dia_assets.dagster.sensors.quality_sensor import quality_sensor
from dia_assets.platform.files.discover import content_hash


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    data, ws = tmp_path / "data", tmp_path / "ws"
    data.mkdir()
    monkeypatch.setenv("DIA_DATA_DIR", str(data))
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    monkeypatch.setenv("DIA_SETTLE_S", "0")  # files are written whole here (settle time: tests/faults/test_sensor_cursor.py)
    return data, ws


def _eval(sensor, instance, cursor=None):  # noqa: ANN001
    return sensor(build_sensor_context(instance=instance, cursor=cursor))


def _succeeded(instance: DagsterInstance, result: SensorResult) -> None:
    """The requested run ended well (the sensor moves past a change only then)."""
    create_run_for_test(instance, job_name="build_job", status=DagsterRunStatus.SUCCESS, tags=result.run_requests[0].tags)


def test_new_data_sensor_runs_once_per_change_and_reports_deletions(env):
    data, _ = env
    instance = DagsterInstance.ephemeral()
    (data / "a.csv").write_text("id\n1\n")
    first = _eval(new_data_sensor, instance)
    assert isinstance(first, SensorResult) and len(first.run_requests) == 1
    assert "added: a.csv" in first.run_requests[0].tags["dia/change"]
    instance.add_dynamic_partitions("raw_files", ["a_csv"])  # the daemon applies the partition request
    # ...and reports the file (an observation for staleness, a materialization for the partition
    # status): the file's content hash is its data version, its path, size and hash the metadata
    observation, materialization = first.asset_events
    assert (type(observation).__name__, type(materialization).__name__) == ("AssetObservation", "AssetMaterialization")
    for event in first.asset_events:
        assert event.partition == "a_csv" and event.tags["dagster/data_version"] == content_hash(data / "a.csv")
        assert event.metadata["sha256"].value == content_hash(data / "a.csv")
        assert event.metadata["size_bytes"].value == 5 and event.metadata["path"].value.endswith("a.csv")
        instance.report_runless_asset_event(event)
    _succeeded(instance, first)
    # the cursor round-trips: the same folder asks for nothing once its run succeeded
    same = _eval(new_data_sensor, instance, first.cursor)
    assert not same.run_requests and same.skip_reason.skip_message == "no change in the data folder"
    assert isinstance(_eval(new_data_sensor, instance, same.cursor), SkipReason)
    (data / "a.csv").write_text("id\n2\n")
    second = _eval(new_data_sensor, instance, first.cursor)
    assert second.run_requests[0].run_key != first.run_requests[0].run_key
    # the same tick evaluated twice asks for the same run: one change never runs twice
    assert _eval(new_data_sensor, instance, first.cursor).run_requests[0].run_key == second.run_requests[0].run_key
    _succeeded(instance, second)
    # reverting the file is a new change (the warehouse holds the second content): a new key
    (data / "a.csv").write_text("id\n1\n")
    third = _eval(new_data_sensor, instance, second.cursor)
    assert third.run_requests[0].run_key not in {first.run_requests[0].run_key, second.run_requests[0].run_key}
    _succeeded(instance, third)
    (data / "a.csv").unlink()
    (data / "b.csv").write_text("id\n1\n")
    fourth = _eval(new_data_sensor, instance, third.cursor)
    assert "deleted: a.csv" in fourth.run_requests[0].tags["dia/change"]


def test_review_gate_ignores_the_template_and_reacts_to_an_edit(env):
    _, ws = env
    instance = DagsterInstance.ephemeral()
    overrides = ws / "review" / "interpretation_overrides.yaml"
    assert isinstance(_eval(review_gate_sensor, instance), SkipReason)
    overrides.parent.mkdir(parents=True)
    overrides.write_text("# tables:\n#   staff:\n#     primary_key: [badge]\n")
    quiet = _eval(review_gate_sensor, instance)
    assert not quiet.run_requests
    overrides.write_text("tables:\n  staff:\n    primary_key: [badge]\n")
    edited = _eval(review_gate_sensor, instance, quiet.cursor)
    assert len(edited.run_requests) == 1 and edited.run_requests[0].run_key.startswith("overrides-")
    assert isinstance(_eval(review_gate_sensor, instance, edited.cursor), SkipReason)


def test_drift_sensor_observes_and_replans_only_affected_questions(env):
    data, ws = env
    instance = DagsterInstance.ephemeral()
    (data / "orders.csv").write_text("order_id,amount,status\n" + "".join(f"{i},{i}.50,open\n" for i in range(1, 60)))
    (data / "staff.csv").write_text("badge,name\n" + "".join(f"B{i:03d},n{i}\n" for i in range(1, 30)))
    interpret_to_files(data, ws / "interpretation.json")
    for qid, sql in {"revenue": "SELECT sum(amount) FROM orders", "people": "SELECT count(*) FROM staff"}.items():
        (ws / "queries" / qid).mkdir(parents=True)
        (ws / "queries" / qid / "query.sql").write_text(sql)
    instance.add_dynamic_partitions("questions", ["revenue", "people"])
    first = _eval(drift_sensor, instance)
    assert not first.run_requests  # nothing to compare with yet
    assert isinstance(_eval(drift_sensor, instance, first.cursor), SkipReason)
    (data / "orders.csv").write_text("order_id,amount,status,channel\n" + "".join(
        f"{i},{'' if i % 2 else f'{i}.50'},open,web\n" for i in range(1, 60)))  # new column, amounts half missing
    interpret_to_files(data, ws / "interpretation.json")
    result = _eval(drift_sensor, instance, first.cursor)
    jobs = sorted((r.job_name, r.partition_key) for r in result.run_requests)
    assert jobs == [("quality_check_job", None), ("query_job", "revenue"), ("schema_job", None)]
    assert all(r.run_key and r.tags.get("dia/drift") for r in result.run_requests)
    assert "column_added orders.channel" in result.asset_events[0].metadata["drift/summary"].value
    assert list((ws / "drift").glob("*.json"))


def test_drift_sensor_no_alert_on_unchanged_data(env):
    data, ws = env
    instance = DagsterInstance.ephemeral()
    (data / "t.csv").write_text("id,v,amount\n" + "".join(f"{i},{'ab'[i % 2]},{i % 7}.25\n" for i in range(1, 200)))
    interpret_to_files(data, ws / "interpretation.json")
    cursor = _eval(drift_sensor, instance).cursor
    shutil.copy(data / "t.csv", data / "t.csv.bak")
    interpret_to_files(data, ws / "interpretation.json")  # new run, same data (the .bak is not read)
    again = _eval(drift_sensor, instance, cursor)
    assert not again.run_requests and not again.asset_events


def _answer(instance, partition, status, verified):  # noqa: ANN001
    instance.report_runless_asset_event(AssetMaterialization(
        asset_key="query_result", partition=partition,
        metadata={"status": status, "verification_passed": verified, "attempts": 1, "latency_s": 0.5},
    ))


def test_quality_sensor_replans_failed_partitions_when_rates_fall(env):
    _, ws = env
    instance = DagsterInstance.ephemeral()
    for i in range(30):
        _answer(instance, f"q{i % 5}", "answered", True)
    healthy = _eval(quality_sensor, instance)
    assert isinstance(healthy, SensorResult) and not healthy.run_requests
    for i in range(10):
        _answer(instance, f"q{i % 5}", "failed" if i % 5 in (1, 2) else "answered", i % 5 not in (1, 2))
    result = _eval(quality_sensor, instance, healthy.cursor)
    assert sorted(r.partition_key for r in result.run_requests) == ["q1", "q2"]
    assert all(r.tags["dia/fresh_memory"] == "true" for r in result.run_requests)
    report = next((ws / "diagnosis").glob("quality-*.md")).read_text()
    assert "success rate" in report and "- q1" in report
    assert isinstance(_eval(quality_sensor, instance, result.cursor), SkipReason)


def test_raw_files_partitions_follow_the_folder(env):
    """Issue 16: a new file's partition is added and a deleted file's retired, no restart needed."""
    data, _ = env
    instance = DagsterInstance.ephemeral()
    (data / "a.csv").write_text("id\n1\n")
    (data / "b.csv").write_text("id\n1\n")
    first = _eval(new_data_sensor, instance)
    adds = [(type(r).__name__, sorted(r.partition_keys)) for r in first.dynamic_partitions_requests]
    assert adds == [("AddDynamicPartitionsRequest", ["a_csv", "b_csv"])]
    instance.add_dynamic_partitions("raw_files", ["a_csv", "b_csv"])  # what the daemon does with the request
    (data / "b.csv").unlink()
    (data / "c.csv").write_text("id\n1\n")
    second = _eval(new_data_sensor, instance, first.cursor)
    reqs = {type(r).__name__: sorted(r.partition_keys) for r in second.dynamic_partitions_requests}
    assert reqs == {"AddDynamicPartitionsRequest": ["c_csv"], "DeleteDynamicPartitionsRequest": ["b_csv"]}
    assert len(second.run_requests) == 1


def test_drift_sensor_waits_for_the_build_that_wrote_the_interpretation(env, monkeypatch):
    """It reacts to the build's outcome (rebuild only after a failed build), never before it."""
    import importlib

    from dagster import DagsterRunStatus

    ds = importlib.import_module("dia_assets.dagster.sensors.drift_sensor")  # the package re-exports the sensor under this name

    data, ws = env
    instance = DagsterInstance.ephemeral()
    (data / "t.csv").write_text("id,v\n" + "".join(f"{i},{i}\n" for i in range(1, 30)))
    interpret_to_files(data, ws / "interpretation.json")
    cursor = _eval(drift_sensor, instance).cursor
    (data / "t.csv").write_text("id,v,w\n" + "".join(f"{i},{i},x\n" for i in range(1, 30)))
    interpret_to_files(data, ws / "interpretation.json")
    monkeypatch.setattr(ds, "producing_build", lambda _i: ("build_job", DagsterRunStatus.STARTED))
    waiting = _eval(drift_sensor, instance, cursor)
    assert isinstance(waiting, SkipReason) and "waiting" in waiting.skip_message
    monkeypatch.setattr(ds, "producing_build", lambda _i: ("build_job", DagsterRunStatus.SUCCESS))
    built = _eval(drift_sensor, instance, cursor)
    assert [r.job_name for r in built.run_requests] == ["quality_check_job"]


def test_a_key_break_fails_key_validity_on_the_table_and_on_the_location_before_table_assets(tmp_path):
    """The daemon reloads its code location now and then: a location loaded before the first
    build has one `warehouse` asset, a later one `warehouse/<table>`. A key break fails the
    table's check always, and `warehouse`'s too while the location evaluating the sensor has no
    table asset, so it shows whichever location the UI and daemon hold."""
    from dagster import AssetKey

    from dia_assets.agents.adaptation.drift import Change, DriftReport
    from dia_assets.contracts.manifest import Manifest, ManifestTable
    from dia_assets.dagster.sensors.drift_sensor import failed_key_checks

    (tmp_path / "schema").mkdir()
    Manifest(generated_at="2026-01-01T00:00:00", data_dir=str(tmp_path), tables=[ManifestTable(
        name="customers", sources=["customers"], source_path="customers.csv", source_format="csv",
        content_hash="x", staging_table="stg_customers", reject_table="rej_customers")]).write(tmp_path / "schema" / "manifest.json")
    report = DriftReport(before="a", after="b", changes=[
        Change(kind="primary_key_broken", source="customers"), Change(kind="column_added", source="customers", column="x"),
        Change(kind="duplicate_rows_grew", source="gone")])
    table, whole, gone = AssetKey(["warehouse", "customers"]), AssetKey("warehouse"), AssetKey(["warehouse", "gone"])

    def failed(loaded):  # noqa: ANN001, ANN202
        checks = failed_key_checks(report, tmp_path, loaded)
        assert all(c.check_name == "key_validity" and not c.passed for c in checks)
        return {c.asset_key: c.description for c in checks}

    # a location with the table assets: the table only; a source without a table: `warehouse`
    assert failed({table}) == {table: "primary_key_broken customers", whole: "duplicate_rows_grew gone"}
    # the location loaded before the first build: the table's check and the one it shows
    assert failed({whole}) == {table: "primary_key_broken customers",
                               whole: "primary_key_broken customers; duplicate_rows_grew gone"}
    assert failed(None) == failed({table})  # no location at hand: the manifest says
    # a location that still has a table the manifest no longer names
    assert failed({table, gone}) == {table: "primary_key_broken customers", gone: "duplicate_rows_grew gone"}
