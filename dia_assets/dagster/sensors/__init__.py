"""Sensors and schedules: DIA reacts to new data, drift, expert edits and falling quality."""

from dia_assets.dagster.sensors.automation import automation_sensor
from dia_assets.dagster.sensors.data_sensors import new_data_sensor, review_gate_sensor
from dia_assets.dagster.sensors.drift_sensor import drift_sensor
from dia_assets.dagster.sensors.jobs import (
            build_job,
            catalog_job,
            memory_job,
            plan_job,
            quality_check_job,
            replan_job,
            schema_job,
)
from dia_assets.dagster.sensors.quality_sensor import quality_sensor
from dia_assets.dagster.sensors.schedules import nightly_refresh, weekly_memory

__all__ = ["JOBS", "SCHEDULES", "SENSORS"]
SENSORS = [new_data_sensor, review_gate_sensor, drift_sensor, quality_sensor, automation_sensor]
SCHEDULES = [nightly_refresh, weekly_memory]
JOBS = [build_job, plan_job, schema_job, catalog_job, quality_check_job, memory_job]  # replan_job is the Query Generator's query_job
__all__ += ["automation_sensor", "build_job", "catalog_job", "drift_sensor", "memory_job", "plan_job", "new_data_sensor", "nightly_refresh", "quality_check_job", "quality_sensor",
            "replan_job", "review_gate_sensor", "schema_job", "weekly_memory"]


