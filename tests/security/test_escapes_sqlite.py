"""SQLite escape attempts, each through the agent's own probe or submit tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.conftest import lite_count
from tests.security.harness import STAFF_ROWS, probe, run_agent, submit

REFUSED = [
    "ATTACH DATABASE '{tmp}/secret.db' AS s",
    "SELECT * FROM s.secrets",
    "DETACH DATABASE main",
    "SELECT load_extension('{tmp}/evil.so')",
    "SELECT readfile('{tmp}/secret.csv')",
    "SELECT writefile('{tmp}/out.txt', 'x')",
    "SELECT * FROM sqlite_master",
    'SELECT * FROM "sqlite_master"',
    "SELECT * FROM [sqlite_schema]",
    "SELECT * FROM main.sqlite_master",
    "SELECT sqlite_version()",
    "SELECT * FROM pragma_table_info('staff')",
    "PRAGMA writable_schema = 1",
    "PRAGMA table_info(staff)",
    "VACUUM INTO '{tmp}/copy.db'",
    "DELETE FROM staff",
    "REPLACE INTO staff (badge) VALUES ('B1')",
    "INSERT OR REPLACE INTO staff (badge) VALUES ('X')",
    "CREATE TABLE t AS SELECT * FROM staff",
    "DROP TABLE staff",
    "SELECT 1; DELETE FROM staff",
    "SELECT 1 /* ; */ ; ATTACH '{tmp}/secret.db' AS s",
    "SELECT \"ｌｏａｄ_ｅｘｔｅｎｓｉｏｎ\"('x')",
    "SELECT length(zeroblob(999999999))",
]


def _fill(sql: str, lite: Path) -> str:
    return sql.replace("{tmp}", str(lite.parent))


@pytest.mark.parametrize("sql", REFUSED)
def test_probe_refused(lite: Path, sql: str) -> None:
    out = run_agent(lite, probe(_fill(sql, lite)))
    assert out.refused("probe"), out.tool("probe")["result"]
    assert out.leaked() == [] and lite_count(lite) == STAFF_ROWS
    assert not (lite.parent / "copy.db").exists() and not (lite.parent / "out.txt").exists()


def test_submit_write_refused(lite: Path) -> None:
    out = run_agent(lite, submit("UPDATE staff SET hourly_rate = 0"))
    assert out.refused("submit") and lite_count(lite, "SELECT COUNT(*) FROM staff WHERE hourly_rate > 0") == STAFF_ROWS


@pytest.mark.parametrize("sql", [
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r",
    "WITH RECURSIVE r(n, s) AS (SELECT 1, 'x' UNION ALL SELECT n + 1, s || s FROM r WHERE n < 40) "
    "SELECT length(max(s)) FROM r",
])
def test_resource_bombs_are_stopped(lite: Path, sql: str) -> None:
    out = run_agent(lite, probe(sql), timeout_s=1.0)
    assert out.stopped("probe") and '"rows"' not in out.tool("probe")["result"]
