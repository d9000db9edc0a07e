"""Declarative automation is on in a fresh instance: the project's own automation sensor is
RUNNING without anyone starting it, and one tick of the real asset daemon requests
`validation_report` (AutomationCondition.eager) once the warehouse it depends on is updated,
then `semantic_catalog` in a run of its own once the report is (it is in no build job: a build
succeeds when its warehouse is validated, issue 31)."""

from __future__ import annotations

import time
from pathlib import Path

from dagster import AssetKey, AssetMaterialization, DagsterRunStatus, RunsFilter, instance_for_test
from dagster._core.remote_origin import InProcessCodeLocationOrigin
from dagster._core.test_utils import create_test_daemon_workspace_context, freeze_time
from dagster._core.types.loadable_target_origin import LoadableTargetOrigin
from dagster._core.workspace.load_target import InProcessWorkspaceLoadTarget
from dagster._daemon.asset_daemon import AssetDaemon

from dia_assets.dagster.sensors.automation import AUTOMATION_SENSOR

# runs stay queued: the test checks what the daemon asks for, not the build itself
QUEUED = {"run_coordinator": {"module": "dagster._core.run_coordinator", "class": "QueuedRunCoordinator"}}


def _location(tmp_path: Path) -> InProcessWorkspaceLoadTarget:
    """The project's code location for an empty workspace (one `warehouse` asset)."""
    (tmp_path / "workspace").mkdir()
    module = tmp_path / "location.py"
    module.write_text("from dia_assets.definitions import build_defs\n"
                      f"defs = build_defs({str(tmp_path / 'workspace')!r})\n")
    origin = LoadableTargetOrigin(python_file=str(module), attribute="defs", working_directory=str(tmp_path))
    return InProcessWorkspaceLoadTarget(InProcessCodeLocationOrigin(origin, location_name="dia"))


def _tick(daemon: AssetDaemon, context) -> None:  # noqa: ANN001 - a WorkspaceProcessContext
    daemon._run_iteration_impl(context, threadpool_executor=None, amp_tick_futures={}, debug_crash_flags={})


def _requested(instance) -> list[set[str]]:  # noqa: ANN001
    runs = instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.QUEUED]))
    return [{k.to_user_string() for k in (r.asset_selection or ())} for r in runs]


def test_automation_sensor_runs_in_a_fresh_instance_and_requests_the_report(tmp_path: Path) -> None:
    with instance_for_test(overrides=QUEUED) as instance, \
            create_test_daemon_workspace_context(_location(tmp_path), instance) as context:
        repo = next(iter(context.create_request_context().get_code_location("dia").get_repositories().values()))
        sensor = repo.get_sensor(AUTOMATION_SENSOR)
        # nobody started it: no stored state, and the state it has is declared in code as running
        assert instance.get_instigator_state(sensor.get_remote_origin_id(), sensor.selector_id) is None
        assert sensor.get_current_instigator_state(None).is_running
        # it is the only automation sensor: Dagster's own (STOPPED) default sensor is not created
        assert [s.name for s in repo.get_sensors() if s.sensor_type.is_handled_by_asset_daemon] == [AUTOMATION_SENSOR]

        daemon = AssetDaemon(settings={}, pre_sensor_interval_seconds=0)
        _tick(daemon, context)
        assert _requested(instance) == []  # the warehouse was never built: nothing to report on

        instance.report_runless_asset_event(AssetMaterialization(asset_key=AssetKey("warehouse")))
        # the next tick is due after the sensor's minimum interval: move the clock, do not wait
        with freeze_time(time.time() + sensor.min_interval_seconds + 1):
            _tick(daemon, context)
        # one run: the report, and the catalog after it (eager counts a parent requested in the same tick)
        assert _requested(instance) == [{"validation_report", "semantic_catalog"}]
        ticks = instance.get_ticks(sensor.get_remote_origin_id(), sensor.selector_id)
        assert len(ticks) == 2 and len(ticks[0].run_ids) == 1  # newest first
        (first,) = instance.get_runs(RunsFilter(statuses=[DagsterRunStatus.QUEUED]))
        assert first.job_name != "build_job"  # the automation's own run, not a build

        # a build_job materializes the report itself: the catalog follows in a run of its own
        instance.report_run_canceled(first)
        now = time.time() + sensor.min_interval_seconds + 1
        for _ in range(2):  # a tick after the request (which resets eager's "since last handled")
            now += sensor.min_interval_seconds + 1
            with freeze_time(now):
                _tick(daemon, context)
        assert _requested(instance) == []
        for key in ("warehouse", "validation_report"):
            instance.report_runless_asset_event(AssetMaterialization(asset_key=AssetKey(key)))
        with freeze_time(now + sensor.min_interval_seconds + 1):
            _tick(daemon, context)
        assert _requested(instance) == [{"semantic_catalog"}]


def test_build_jobs_leave_the_catalog_to_the_automation() -> None:
    """`build_job` and `schema_job` succeed once the warehouse is validated, like `dia build`;
    the catalog has its own job and an eager condition, so it still follows every build."""

    from dia_assets.definitions import defs

    for name in ("build_job", "schema_job"):
        keys = set(defs.resolve_job_def(name).asset_layer.executable_asset_keys)
        assert AssetKey("validation_report") in keys and AssetKey("semantic_catalog") not in keys, name
    catalog_job = defs.resolve_job_def("catalog_job")
    assert AssetKey("semantic_catalog") in catalog_job.asset_layer.executable_asset_keys
    spec = defs.resolve_assets_def("semantic_catalog").get_asset_spec(AssetKey("semantic_catalog"))
    assert spec.automation_condition.get_label() == "eager, after each new input"  # tests/test_eager_after_each_input.py
