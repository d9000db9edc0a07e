"""Fidelity across engines, on Spark: every dataset test of test_engine_fidelity.py (the gold
SQL of every question, every refined table whole, the benches' question sets) on a DuckDB build
and a Spark build of the same files (`make test-spark`), for northwind and hr; the other
datasets are in test_engine_fidelity_spark_more.py (a worker each: Spark builds are slow)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests import test_engine_fidelity as fidelity
from tests.spark_fixtures import require_spark, spark_target

pytestmark = [pytest.mark.spark, pytest.mark.heavy]

TARGETS = {
    "duckdb": fidelity.TARGETS["duckdb"],
    "spark": lambda request, folder, name: spark_target(folder / "spark-root"),
}
DATASETS = ["northwind", "hr"]
globals().update(fidelity.dataset_tests(DATASETS))


@pytest.fixture(scope="module")
def builds(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., dict[str, str]]:
    require_spark()
    return fidelity.dataset_builds(request, tmp_path_factory, TARGETS)
