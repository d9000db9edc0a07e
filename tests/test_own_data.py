"""Your own data end to end (issue 31, issue 30): a data folder brings its own questions and
overrides (none by default), and switching folders in one Dagster instance makes the sensors
say "data folder changed", never "overrides edited" or drift. Real builds, a real (ephemeral)
Dagster instance and the real sensors; `dia demo` in a subprocess as `make demo` runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from dagster import (
    DagsterInstance,
    DagsterRunStatus,
    SensorResult,
    SkipReason,
    build_sensor_context,
)
from dagster._core.instance.ref import InstanceRef
from dagster._core.test_utils import create_run_for_test

from dia_assets.agents.data_folder import folder_id, overrides_seed, questions_file
from dia_assets.agents.query.run import load_questions
from dia_assets.dagster.query import (
    QUESTIONS,
    question_partitions_sensor,
    register_question_partitions,
)
from dia_assets.dagster.sensors.data_sensors import new_data_sensor, review_gate_sensor
from dia_assets.dagster.sensors.drift_sensor import drift_sensor
from dia_assets.pipeline import build
from tests.conftest import EXAMPLES, ROOT
from tests.data_folders import folder_a, folder_b


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("DIA_SETTLE_S", "0")  # files are written whole here
    for name in ("DIA_QUESTIONS", "DIA_WAREHOUSE", "DIA_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _use(env: pytest.MonkeyPatch, data: Path, ws: Path) -> None:
    env.setenv("DIA_DATA_DIR", str(data))
    env.setenv("DIA_WORKSPACE", str(ws))


def _tick(sensor, instance: DagsterInstance, cursor: str | None = None):  # noqa: ANN001, ANN202
    return sensor(build_sensor_context(instance=instance, cursor=cursor))


def _apply_partitions(instance: DagsterInstance, result: SensorResult) -> None:
    """What the daemon does with a tick's partition requests."""
    for req in result.dynamic_partitions_requests or []:
        if type(req).__name__.startswith("Add"):
            instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
        else:
            for key in req.partition_keys:
                instance.delete_dynamic_partition(req.partitions_def_name, key)


def _tags(result: SensorResult | SkipReason) -> list[dict[str, str]]:
    return [dict(r.tags) for r in getattr(result, "run_requests", None) or []]


def _skip(result: SensorResult | SkipReason) -> str:
    reason = result if isinstance(result, SkipReason) else result.skip_reason
    return reason.skip_message if reason else ""


def test_questions_and_overrides_belong_to_the_data_folder(tmp_path: Path, env: pytest.MonkeyPatch) -> None:
    a, b = folder_a(tmp_path), folder_b(tmp_path)
    env.setenv("DIA_DATA_DIR", str(a))
    assert questions_file() == a / "questions.yaml"
    assert [q["id"] for q in load_questions()] == ["customers_per_city", "order_total"]
    assert overrides_seed(a) == a / "overrides.yaml"
    env.setenv("DIA_DATA_DIR", str(b))
    assert questions_file() is None and load_questions() == [] and overrides_seed(b) is None
    env.setenv("DIA_QUESTIONS", str(a / "questions.yaml"))  # the setting still names any file
    assert len(load_questions()) == 2
    env.delenv("DIA_QUESTIONS")
    env.setenv("DIA_DATA_DIR", str(EXAMPLES / "data"))  # the bundled example keeps its 15
    assert len(load_questions()) == 15 and overrides_seed(EXAMPLES / "data") is not None


def test_switching_folder_and_workspace_in_one_instance_names_the_switch(tmp_path: Path, env: pytest.MonkeyPatch) -> None:
    """The issue's path: A built and watched, then DIA_DATA_DIR and DIA_WORKSPACE point at B."""
    a, b = folder_a(tmp_path), folder_b(tmp_path)
    ws_a, ws_b = tmp_path / "ws_shop", tmp_path / "ws_music"
    instance = DagsterInstance.ephemeral()
    _use(env, a, ws_a)
    assert build(a, ws_a, overrides_seed=overrides_seed(a)).accepted
    assert "rename: clients" in (ws_a / "review" / "interpretation_overrides.yaml").read_text()
    data_a = _tick(new_data_sensor, instance)
    assert not _tags(data_a)  # A is built: nothing to do
    _apply_partitions(instance, data_a)
    gate_a, drift_a = _tick(review_gate_sensor, instance), _tick(drift_sensor, instance)
    assert not _tags(gate_a) and not _tags(drift_a)
    questions_a = _tick(question_partitions_sensor, instance)
    _apply_partitions(instance, questions_a)
    assert sorted(instance.get_dynamic_partitions(QUESTIONS.name)) == ["customers_per_city", "order_total"]

    _use(env, b, ws_b)
    data_b = _tick(new_data_sensor, instance, data_a.cursor)
    [tags] = _tags(data_b)  # B is not built yet: one build, and it says why
    assert tags["dia/trigger"] == f"data folder changed: {folder_id(a, ws_a)} -> {folder_id(b, ws_b)}"
    assert "artists.csv" in tags["dia/change"]
    _apply_partitions(instance, data_b)
    assert sorted(instance.get_dynamic_partitions("raw_files")) == ["albums_csv", "artists_csv"]
    assert build(b, ws_b, overrides_seed=overrides_seed(b)).accepted  # the run the sensor asked for
    create_run_for_test(instance, job_name="build_job", status=DagsterRunStatus.SUCCESS, tags=tags)
    after = _tick(new_data_sensor, instance, data_b.cursor)
    assert not _tags(after) and _skip(after) == "no change in the data folder"
    # B's overrides are the template, not an edit of A's
    assert "rename: clients" not in (ws_b / "review" / "interpretation_overrides.yaml").read_text()
    gate_b = _tick(review_gate_sensor, instance, gate_a.cursor)
    assert not _tags(gate_b) and _skip(gate_b).startswith("data folder changed:")
    assert _skip(_tick(review_gate_sensor, instance, gate_b.cursor)) == "overrides unchanged"
    drift_b = _tick(drift_sensor, instance, drift_a.cursor)
    assert not _tags(drift_b) and not (ws_b / "drift").exists()
    # B has no questions: A's partitions go, none come, and the tick says how to add some
    questions_b = _tick(question_partitions_sensor, instance)
    _apply_partitions(instance, questions_b)
    assert instance.get_dynamic_partitions(QUESTIONS.name) == []
    assert "questions.yaml" in _skip(questions_b) and "DIA_QUESTIONS" in _skip(questions_b)
    # and the sensors still react to what does happen in B: an expert's edit
    overrides = ws_b / "review" / "interpretation_overrides.yaml"
    overrides.write_text("version: 1\ntables:\n  artists:\n    rename: performers\n")
    [edit] = _tags(_tick(review_gate_sensor, instance, gate_b.cursor))
    assert edit["dia/trigger"] == "overrides edited"


def test_switching_the_folder_of_one_workspace_rebuilds_nothing_built(tmp_path: Path, env: pytest.MonkeyPatch) -> None:
    """Same workspace, B built there by `dia build`: the sensors see a switch, not a change."""
    a, b, ws = folder_a(tmp_path), folder_b(tmp_path), tmp_path / "ws"
    instance = DagsterInstance.ephemeral()
    _use(env, a, ws)
    assert build(a, ws, overrides_seed=overrides_seed(a)).accepted
    data_a, gate_a, drift_a = (_tick(s, instance) for s in (new_data_sensor, review_gate_sensor, drift_sensor))
    build(b, ws)
    _use(env, b, ws)
    data_b = _tick(new_data_sensor, instance, data_a.cursor)
    assert not _tags(data_b) and _skip(data_b).startswith("data folder changed:")
    assert not _tags(_tick(review_gate_sensor, instance, gate_a.cursor))
    drift_b = _tick(drift_sensor, instance, drift_a.cursor)
    assert not _tags(drift_b) and not drift_b.asset_events and _skip(drift_b).startswith("data folder changed:")
    # a real change in B afterwards is a change, not a switch
    (b / "genres.csv").write_text("genre_id,genre\n1,rock\n2,jazz\n")
    [tags] = _tags(_tick(new_data_sensor, instance, data_b.cursor))
    assert tags["dia/change"] == "added: genres.csv" and "dia/trigger" not in tags


def test_register_question_partitions_follows_the_questions_file(tmp_path: Path, env: pytest.MonkeyPatch) -> None:
    a, b = folder_a(tmp_path), folder_b(tmp_path)
    instance = DagsterInstance.ephemeral()
    env.setenv("DIA_DATA_DIR", str(a))
    assert register_question_partitions(instance) == ["customers_per_city", "order_total"]
    env.setenv("DIA_DATA_DIR", str(b))
    assert register_question_partitions(instance) == []
    assert instance.get_dynamic_partitions(QUESTIONS.name) == []


@pytest.mark.heavy
def test_dia_demo_on_a_foreign_folder_takes_nothing_of_the_example(tmp_path: Path) -> None:
    """`dia demo --data-dir B` from the project root (where examples/ is, as `make demo` runs):
    B's workspace gets the template and no questions; the example's stay with the example."""
    b = folder_b(tmp_path)
    ws, home = tmp_path / "ws", tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("DIA_") or k == "DIA_PGDATA_HOME"}
    env.update({"DAGSTER_HOME": str(home), "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)})
    done = subprocess.run([sys.executable, "-m", "dia_assets.cli", "demo", "--data-dir", str(b), "-w", str(ws)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-3000:]
    overrides = (ws / "review" / "interpretation_overrides.yaml").read_text()
    assert "hospital" not in overrides and "artists" in overrides and "seeded" not in out
    assert "no questions for" in out and "staff_count_per_role" not in out
    with DagsterInstance.from_ref(InstanceRef.from_dir(str(home))) as instance:
        assert instance.get_dynamic_partitions(QUESTIONS.name) == []
        assert sorted(instance.get_dynamic_partitions("raw_files")) == ["albums_csv", "artists_csv"]
