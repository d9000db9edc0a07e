"""The Dagster resources, where people look for them (installed as `dia_assets.resources`).
They live in dia_assets/dagster/resources/: thin, configurable handles on the outside world."""

from dia_assets.dagster.resources import *  # noqa: F403
from dia_assets.dagster.resources import __all__  # noqa: F401
