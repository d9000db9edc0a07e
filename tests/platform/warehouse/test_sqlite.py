"""SQLite passes the warehouse conformance suite."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.platform.warehouse.conformance import BaseWarehouseSuite
from tests.query_fixtures import build_sqlite


class TestSQLite(BaseWarehouseSuite):
    dialect = "sqlite"
    SLOW_SQL = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10000000000) "
                "SELECT COUNT(*) FROM n")
    ESCAPES = [
        "ATTACH '{dir}/secret.db' AS s",
        "SELECT * FROM sqlite_master",
        "SELECT load_extension('x')",
        "SELECT sqlite_version()",
        "PRAGMA table_info(staff)",
    ]
    CONNECTION_REFUSES = [
        "ATTACH '{dir}/secret.db' AS s",
        "SELECT * FROM sqlite_master",
        "SELECT sqlite_version()",
        "PRAGMA writable_schema = 1",
    ]

    @pytest.fixture
    def target(self, tmp_path: Path) -> str:
        wh = build_sqlite(tmp_path / "w.sqlite")
        con = sqlite3.connect(tmp_path / "secret.db")
        con.execute("CREATE TABLE secrets (secret TEXT)")
        con.execute("INSERT INTO secrets VALUES ('TOPSECRET')")
        con.commit()
        con.close()
        self.ESCAPES = [s.format(dir=tmp_path) for s in type(self).ESCAPES]
        self.CONNECTION_REFUSES = [s.format(dir=tmp_path) for s in type(self).CONNECTION_REFUSES]
        return str(wh)
