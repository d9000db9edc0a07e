"""Thresholds and intervals, from the environment so operators can tune them without code."""

from __future__ import annotations

import os

from dia_assets.agents.adaptation.drift import DriftThresholds


def _float(name: str, default: float) -> float:
    return float(os.environ.get(name, default))


def _int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


def drift_thresholds() -> DriftThresholds:
    return DriftThresholds(
        null_rate_jump=_float("DIA_DRIFT_NULL_JUMP", 0.10),
        psi=_float("DIA_DRIFT_PSI", 0.20),
        fk_coverage_drop=_float("DIA_DRIFT_FK_DROP", 0.02),
        psi_min_rows=_int("DIA_DRIFT_PSI_MIN_ROWS", 50),
        small_relative_change=_float("DIA_DRIFT_SMALL_CHANGE", 0.25),
        chi_square_p=_float("DIA_DRIFT_CHI2_P", 0.01),
    )


SENSOR_INTERVAL_S = _int("DIA_SENSOR_INTERVAL_S", 30)
QUALITY_WINDOW = _int("DIA_QUALITY_WINDOW", 10)
QUALITY_BASELINE = _int("DIA_QUALITY_BASELINE", 30)
QUALITY_MARGIN = _float("DIA_QUALITY_MARGIN", 0.15)
NIGHTLY_CRON = os.environ.get("DIA_NIGHTLY_CRON", "0 2 * * *")
WEEKLY_MEMORY_CRON = os.environ.get("DIA_MEMORY_CRON", "0 3 * * 0")


def settle_s() -> float:
    """Seconds a changed file's size and mtime must stay the same (across two sensor ticks)
    before it is read; 0 reads at once. Read per tick, so tests can set it."""
    return _float("DIA_SETTLE_S", 5.0)


def build_tries() -> int:
    """Runs the data sensor requests for one change whose run fails, is canceled or vanishes."""
    return max(1, _int("DIA_BUILD_TRIES", 3))
