"""Spark (local mode) passes the warehouse conformance suite: Spark SQL has no read-only mode
and no roles, so the connection itself refuses writes, other databases, files and table
functions, below the gate."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from tests.platform.warehouse.conformance import BaseWarehouseSuite
from tests.query_fixtures import build_tiny_duckdb
from tests.spark_fixtures import require_spark, spark_from_duckdb

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def spark_tiny(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    require_spark()
    tmp = tmp_path_factory.mktemp("spark-conformance")
    duck = build_tiny_duckdb(tmp / "w.duckdb")
    con = duckdb.connect(str(duck))
    con.execute("CREATE SCHEMA staging")
    con.execute("CREATE TABLE staging.secrets AS SELECT 'TOPSECRET' AS secret")
    con.close()
    (tmp / "secret").mkdir()
    duckdb.sql(f"COPY (SELECT 'TOPSECRET' AS secret) TO '{tmp}/secret/s.parquet' (FORMAT parquet)")
    return spark_from_duckdb(duck, tmp / "root"), tmp


class TestSpark(BaseWarehouseSuite):
    dialect = "spark"
    SLOW_SQL = "SELECT COUNT(*) FROM range(100000000000) a CROSS JOIN range(1000) b"
    ESCAPES = [
        "SELECT * FROM parquet.`{dir}/secret`",
        "SELECT reflect('java.lang.System', 'getProperty', 'user.home')",
        "SELECT java_method('java.lang.System', 'getenv', 'HOME')",
        "SELECT input_file_name() FROM staff",
        "SELECT current_user()",
        "SELECT * FROM read_files('{dir}/secret')",
    ]
    CONNECTION_REFUSES = [
        "SELECT * FROM parquet.`{dir}/secret`",
        "CREATE TABLE escape USING parquet LOCATION '{dir}/secret'",
        "INSERT INTO staff SELECT * FROM staff",
        "SET spark.sql.runSQLOnFiles = true",
        "SELECT * FROM spark_catalog.default.staff",
        "SELECT * FROM read_files('{dir}/secret')",
        "CACHE TABLE staff",
    ]

    @pytest.fixture
    def target(self, spark_tiny: tuple[str, Path]) -> str:
        target, tmp = spark_tiny
        self.ESCAPES = [s.format(dir=tmp) for s in type(self).ESCAPES]
        self.CONNECTION_REFUSES = [s.format(dir=tmp) for s in type(self).CONNECTION_REFUSES]
        return target
