"""The whole code location against a stored snapshot: a change to the asset graph shows
up in review. Regenerate with DIA_UPDATE_SNAPSHOTS=1 after an intended change."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from dagster import Definitions

SNAPSHOT = SNAPSHOT_FILE = Path(__file__).parent / "snapshots" / "definitions.json"


def _shape(workspace: Path | None = None) -> dict:
    """The code location for a workspace with no build yet (the snapshot must not depend on
    whatever `dia_workspace/` holds): one `warehouse` asset."""
    from dia_assets.definitions import build_defs

    defs = build_defs(workspace or Path(__file__).parent / "snapshots" / "no_workspace")
    Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        assets[key.to_user_string()] = {
            "deps": sorted(p.to_user_string() for p in node.parent_keys),
            "partitioned": node.partitions_def is not None,
            "checks": sorted(c.name for c in node.check_keys),
            "automation": node.automation_condition.get_label() if node.automation_condition else None,
        }
    return {
        "assets": assets,
        "jobs": sorted(j.name for j in defs.jobs or []),
        "sensors": sorted(s.name for s in defs.sensors or []),
        "schedules": sorted(s.name for s in defs.schedules or []),
        "resources": sorted((defs.resources or {}).keys()),
    }


def test_definitions_match_snapshot():
    """A missing snapshot fails (a deleted file must not pass by rewriting itself); only
    DIA_UPDATE_SNAPSHOTS=1 writes it."""
    shape = _shape()
    if os.environ.get("DIA_UPDATE_SNAPSHOTS") == "1":
        SNAPSHOT.write_text(json.dumps(shape, indent=2) + "\n")
    assert SNAPSHOT.exists(), f"{SNAPSHOT} is missing: write it with DIA_UPDATE_SNAPSHOTS=1 and review it"
    assert shape == json.loads(SNAPSHOT.read_text())


def test_a_missing_snapshot_fails_and_is_not_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard above: without DIA_UPDATE_SNAPSHOTS=1 a deleted snapshot is a failure, and
    the test leaves no file behind; with it, the file is written and the test passes."""
    missing = tmp_path / "definitions.json"
    monkeypatch.setattr(sys.modules[__name__], "SNAPSHOT", missing)
    monkeypatch.delenv("DIA_UPDATE_SNAPSHOTS", raising=False)
    with pytest.raises(AssertionError, match="is missing"):
        test_definitions_match_snapshot()
    assert not missing.exists()
    monkeypatch.setenv("DIA_UPDATE_SNAPSHOTS", "1")
    test_definitions_match_snapshot()
    assert json.loads(missing.read_text()) == json.loads(SNAPSHOT_FILE.read_text())


def test_every_refined_stage_is_downstream_of_the_raw_files():
    shape = _shape()["assets"]
    assert "interpretation" in shape["schema_manifest"]["deps"]
    assert shape["query_result"]["partitioned"] and "warehouse" in shape["query_result"]["deps"]
    assert shape["interpretation"]["deps"] == ["raw_files"] and shape["raw_files"]["partitioned"]
    assert sorted(shape["warehouse"]["checks"]) == [
        "column_coverage", "key_validity", "load_integrity", "row_count_reconciliation", "test_queries"]


def test_runs_are_in_process_and_every_sensor_starts_on():
    """A process per step cost the UI's build_job 44.8 s against 9.2 s in process; a sensor
    that starts off (question_partitions did) leaves new questions unregistered."""
    from dagster import DefaultSensorStatus, in_process_executor

    from dia_assets.definitions import build_defs

    defs = build_defs(Path(__file__).parent / "snapshots" / "no_workspace")
    for name in ("build_job", "schema_job", "quality_check_job", "plan_job"):
        assert defs.resolve_job_def(name).executor_def is in_process_executor, name
    assert defs.resolve_implicit_global_asset_job_def().executor_def is in_process_executor
    assert {s.name: s.default_status for s in defs.sensors} == dict.fromkeys(
        ["new_data_sensor", "review_gate_sensor", "drift_sensor", "quality_sensor", "dia_automation",
         "question_partitions"],
        DefaultSensorStatus.RUNNING)


def test_dia_executor_switches_to_multiprocess_and_refuses_an_unknown_value(monkeypatch):  # noqa: ANN001
    from dia_assets.definitions import build_defs

    empty = Path(__file__).parent / "snapshots" / "no_workspace"
    monkeypatch.setenv("DIA_EXECUTOR", "multiprocess")
    assert build_defs(empty).resolve_job_def("build_job").executor_def.name == "multiprocess"
    monkeypatch.setenv("DIA_EXECUTOR", "celery")
    with pytest.raises(ValueError, match="DIA_EXECUTOR=celery: expected one of in_process, multiprocess"):
        build_defs(empty)


def test_dia_executor_names_any_executor_by_module_and_attribute(monkeypatch):  # noqa: ANN001
    """A deployment picks its executor (dagster_k8s:k8s_job_executor, ...) by configuration."""
    from dia_assets.definitions import build_defs

    empty = Path(__file__).parent / "snapshots" / "no_workspace"
    monkeypatch.setenv("DIA_EXECUTOR", "dagster:multiprocess_executor")
    assert build_defs(empty).resolve_job_def("build_job").executor_def.name == "multiprocess"
    monkeypatch.setenv("DIA_EXECUTOR", "dagster_k8s_not_installed:k8s_job_executor")
    with pytest.raises(ValueError, match=r"DIA_EXECUTOR=dagster_k8s_not_installed:k8s_job_executor: cannot load it"):
        build_defs(empty)
    monkeypatch.setenv("DIA_EXECUTOR", "dagster:asset")
    with pytest.raises(ValueError, match="DIA_EXECUTOR=dagster:asset: function is not a Dagster executor"):
        build_defs(empty)
    monkeypatch.setenv("DIA_EXECUTOR", "k8s job executor")
    with pytest.raises(ValueError, match="expected one of in_process, multiprocess, or module:attribute"):
        build_defs(empty)
