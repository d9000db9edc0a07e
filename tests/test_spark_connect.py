"""A Spark Connect warehouse (`sc://HOST:PORT/ROOT`), tested against a real Connect server
(local[2]) started on loopback for this module: the build, the agent's read-only connection,
its row cap and its timeout, which interrupts the statement's session tag (Connect has no
SparkContext)."""

from __future__ import annotations

import os

import pytest

from dia_assets.platform.warehouse.spark import parse_target, release
from tests.spark_fixtures import connect_server
from tests.spark_remote_suite import RemoteSparkSuite, build_both

pytestmark = [pytest.mark.spark, pytest.mark.heavy]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    tmp = tmp_path_factory.mktemp("spark-connect")
    with connect_server(tmp / "server") as address:
        target = f"{address}{(tmp / 'root').resolve()}"
        try:
            yield build_both(tmp, target)
        finally:
            release(parse_target(target))  # before the server stops


class TestSparkConnect(RemoteSparkSuite):
    def test_the_connection_is_a_connect_client(self, db) -> None:  # noqa: ANN001
        from pyspark.sql.connect.session import SparkSession

        assert isinstance(db.spark, SparkSession) and db.target.remote.startswith("sc://127.0.0.1:")
        # the process is not marked Connect-only: a classic master (local[2]) still starts after it
        assert "SPARK_CONNECT_MODE_ENABLED" not in os.environ
