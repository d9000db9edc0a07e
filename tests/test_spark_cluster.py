"""A standalone Spark cluster (`spark://HOST:PORT/ROOT`), tested against a real Master and one
Worker (1 core) started on loopback for this module: executors run in the worker's own JVMs, so
reading the version's Parquet folders and cancelling a statement's jobs cross processes."""

from __future__ import annotations

import pytest

from dia_assets.platform.warehouse.spark import parse_target, release
from tests.spark_fixtures import standalone_cluster
from tests.spark_remote_suite import RemoteSparkSuite, build_both

pytestmark = [pytest.mark.spark, pytest.mark.heavy]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    tmp = tmp_path_factory.mktemp("spark-cluster")
    with standalone_cluster(tmp / "cluster") as master:
        target = f"{master}{(tmp / 'root').resolve()}"
        try:
            yield build_both(tmp, target)
        finally:
            release(parse_target(target))  # before the server stops


class TestSparkCluster(RemoteSparkSuite):
    def test_the_jobs_ran_in_an_executor_of_the_worker(self, built: dict, db) -> None:  # noqa: ANN001
        assert db.spark.sparkContext.master == parse_target(built["target"]).master
        assert db.query("SELECT count(*) FROM countries").rows[0][0] > 0
        # the worker started an executor JVM for this application (its folder under the work dir)
        assert list((built["tmp"] / "cluster" / "work").glob("app-*/*/stderr"))
