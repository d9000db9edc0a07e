"""Fidelity across engines, on Spark: every test of test_engine_fidelity.py (the gold SQL of
every question over the five datasets, every refined table whole, the benches' question sets)
on a DuckDB build and a Spark build of the same files (`make test-spark`)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests import test_engine_fidelity as fidelity
from tests.spark_fixtures import require_spark, spark_target
from tests.test_engine_fidelity import (  # noqa: F401 - the tests, run here with this module's `builds`
    test_bench_question_sets_agree_on_every_engine,
    test_every_table_holds_the_same_rows_on_every_engine,
    test_full_datasets_agree_on_every_engine,
    test_gold_sql_returns_the_same_rows_on_every_engine,
)

pytestmark = [pytest.mark.spark, pytest.mark.heavy]

TARGETS = {
    "duckdb": fidelity.TARGETS["duckdb"],
    "spark": lambda request, folder, name: spark_target(folder / "spark-root"),
}


@pytest.fixture(scope="module")
def builds(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Callable[..., dict[str, str]]:
    require_spark()
    return fidelity.dataset_builds(request, tmp_path_factory, TARGETS)
