"""The sensors, schedules and jobs, where people look for them (installed as
`dia_assets.sensors`). They live in dia_assets/dagster/sensors/: DIA reacts to new data,
drift, expert edits and falling quality there."""

from dia_assets.dagster.sensors import *  # noqa: F403
from dia_assets.dagster.sensors import __all__  # noqa: F401
