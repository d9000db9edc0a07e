"""DuckDB passes the warehouse conformance suite."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from tests.platform.warehouse.conformance import BaseWarehouseSuite
from tests.query_fixtures import build_tiny_duckdb


class TestDuckDB(BaseWarehouseSuite):
    dialect = "duckdb"
    SLOW_SQL = "SELECT COUNT(*) FROM range(100000000000) a"
    ESCAPES = [
        "SELECT * FROM read_csv('{dir}/secret.csv')",
        "SELECT * FROM '{dir}/secret.csv'",
        "COPY staff TO '{dir}/out.csv'",
        "ATTACH '{dir}/other.duckdb' AS o",
        "SELECT current_setting('memory_limit')",
        "SELECT * FROM duckdb_settings()",
        "INSTALL httpfs",
    ]
    CONNECTION_REFUSES = [
        "SELECT * FROM read_csv('{dir}/secret.csv')",
        "SET enable_external_access = true",
        "SET memory_limit = '10GB'",
        "COPY staff TO '{dir}/out.csv'",
    ]

    @pytest.fixture
    def target(self, tmp_path: Path) -> str:
        wh = build_tiny_duckdb(tmp_path / "w.duckdb")
        (tmp_path / "secret.csv").write_text("secret\nTOPSECRET\n")
        con = duckdb.connect(str(wh))
        con.execute("CREATE SCHEMA staging")
        con.execute("CREATE TABLE staging.secrets AS SELECT 'TOPSECRET' AS secret")
        con.close()
        self.ESCAPES = [s.format(dir=tmp_path) for s in type(self).ESCAPES]
        self.CONNECTION_REFUSES = [s.format(dir=tmp_path) for s in type(self).CONNECTION_REFUSES]
        return str(wh)
