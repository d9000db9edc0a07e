"""Time-based refreshes."""

from dagster import DefaultScheduleStatus, ScheduleDefinition

from sensors.jobs import build_job, memory_job
from sensors.settings import NIGHTLY_CRON, WEEKLY_MEMORY_CRON

nightly_refresh = ScheduleDefinition(
    name="nightly_refresh", job=build_job, cron_schedule=NIGHTLY_CRON,
    default_status=DefaultScheduleStatus.RUNNING, description="Full re-interpretation and rebuild.",
)
weekly_memory = ScheduleDefinition(
    name="weekly_memory_consolidation", job=memory_job, cron_schedule=WEEKLY_MEMORY_CRON,
    default_status=DefaultScheduleStatus.RUNNING, description="Consolidate, promote and forget lessons.",
)
