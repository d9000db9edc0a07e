"""Each schedule's description says what its run does: the mode it names is the run config it emits."""

from __future__ import annotations

from pathlib import Path

from dagster import build_schedule_context, validate_run_config

from dia_assets.dagster.sensors.schedules import FULL_BUILD
from dia_assets.definitions import build_defs

EMPTY = Path(__file__).parent / "snapshots" / "no_workspace"


def _requests(name: str):  # noqa: ANN202
    defs = build_defs(EMPTY)
    schedule = defs.resolve_schedule_def(name)
    requests = list(schedule.evaluate_tick(build_schedule_context()).run_requests or [])
    return defs, schedule, requests


def test_nightly_refresh_is_the_full_rebuild_its_description_names():
    defs, schedule, [request] = _requests("nightly_refresh")
    assert schedule.job_name == "build_job"
    config = request.run_config
    assert config == FULL_BUILD and config["ops"]["warehouse"]["config"]["incremental"] is False
    # the config is valid for the job the schedule runs (an op renamed would fail here)
    validate_run_config(defs.resolve_job_def("build_job"), config)
    text = schedule.description.lower()
    assert text.startswith("build_job, full") and "incremental: false" in text and "re-interpret" in text


def test_weekly_memory_names_its_job_and_emits_no_config():
    _, schedule, [request] = _requests("weekly_memory_consolidation")
    assert schedule.job_name == "memory_job" and schedule.description.startswith("memory_job:")
    assert not request.run_config
