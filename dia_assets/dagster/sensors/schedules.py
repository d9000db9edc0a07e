"""Time-based refreshes.

The sensors react to each change during the day with an incremental build (only the tables whose
file or plan changed are reloaded). The nightly refresh is the safety net a data engineer expects
from a nightly job: a full re-interpretation and a full rebuild of every table from its file, so
nothing the incremental path carried over survives a night unchecked."""

from dagster import DefaultScheduleStatus, ScheduleDefinition

from dia_assets.dagster.sensors.jobs import build_job, memory_job
from dia_assets.dagster.sensors.settings import NIGHTLY_CRON, WEEKLY_MEMORY_CRON

# the warehouse step's config (schema_assets.WarehouseConfig) for a build from scratch
FULL_BUILD = {"ops": {"warehouse": {"config": {"incremental": False}}}}

nightly_refresh = ScheduleDefinition(
    name="nightly_refresh", job=build_job, cron_schedule=NIGHTLY_CRON, run_config=FULL_BUILD,
    default_status=DefaultScheduleStatus.RUNNING,
    description="build_job, full: re-interpret every raw file and rebuild every warehouse table from its "
    "file (warehouse config incremental: false), validate, swap in, refresh the catalog.",
)
weekly_memory = ScheduleDefinition(
    name="weekly_memory_consolidation", job=memory_job, cron_schedule=WEEKLY_MEMORY_CRON,
    default_status=DefaultScheduleStatus.RUNNING,
    description="memory_job: consolidate, promote and forget the Query Generator's memory lessons.",
)
