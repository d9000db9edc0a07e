"""Thresholds and intervals, from the DIA_* settings so operators can tune them without code."""

from __future__ import annotations

from dia_assets.agents.adaptation.drift import DriftThresholds
from dia_assets.platform.settings import get_settings


def drift_thresholds() -> DriftThresholds:
    """The DIA_DRIFT_* settings, read per tick."""
    return DriftThresholds.from_settings(get_settings())


# read when the definitions load: a bad value stops the import with one line naming it
SENSOR_INTERVAL_S = get_settings().sensor_interval_s
QUALITY_WINDOW = get_settings().quality_window
QUALITY_BASELINE = get_settings().quality_baseline
QUALITY_MARGIN = get_settings().quality_margin
NIGHTLY_CRON = get_settings().nightly_cron
WEEKLY_MEMORY_CRON = get_settings().memory_cron


def settle_s() -> float:
    """Seconds a changed file's size and mtime must stay the same (across two sensor ticks)
    before it is read; 0 reads at once. Read per tick, so tests can set it."""
    return get_settings().settle_s


def build_tries() -> int:
    """Runs the data sensor requests for one change whose run fails, is canceled or vanishes."""
    return get_settings().build_tries
