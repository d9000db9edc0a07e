"""DuckDB escape attempts, each through the agent's own probe or submit tool."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.security.conftest import duck_count
from tests.security.harness import STAFF_ROWS, probe, run_agent, submit

# {secret} is the planted file, {tmp} its folder.
REFUSED = [
    # files
    "SELECT * FROM read_csv('{secret}')",
    "SELECT * FROM read_csv_auto('{secret}')",
    "SELECT content FROM read_text('{secret}')",
    "SELECT content FROM read_blob('{secret}')",
    "SELECT * FROM glob('{tmp}/*')",
    "SELECT * FROM '{secret}'",
    'SELECT * FROM "{secret}"',
    "SELECT * FROM read_parquet('{tmp}/x.parquet')",
    "SELECT * FROM read_json_auto('{secret}')",
    "SELECT * FROM sniff_csv('{secret}')",
    "COPY staff TO '{tmp}/out.csv'",
    "COPY (SELECT * FROM staff) TO '{tmp}/out.csv'",
    "EXPORT DATABASE '{tmp}/dump'",
    "SELECT * FROM \"read_csv\"('{secret}')",
    "SELECT * FROM main.read_text('{secret}')",
    # network and extensions
    "SELECT * FROM read_csv('https://example.com/x.csv')",
    "INSTALL httpfs",
    "LOAD httpfs",
    "ATTACH '{tmp}/other.duckdb' AS other",
    "ATTACH 'https://example.com/db.duckdb' AS remote",
    # settings and catalog disclosure
    "SELECT * FROM duckdb_settings()",
    "SELECT current_setting('memory_limit')",
    'SELECT "current_setting"(\'threads\')',
    "SELECT * FROM pragma_database_list",
    "SELECT * FROM pragma_database_list()",
    "PRAGMA database_list",
    "SELECT version()",
    "SELECT * FROM duckdb_tables()",
    "SELECT * FROM duckdb_extensions()",
    "SELECT * FROM duckdb_secrets()",
    "SELECT * FROM information_schema.tables",
    "SELECT table_name FROM information_schema.columns",
    "SELECT * FROM staging.secrets",
    'SELECT * FROM "staging"."secrets"',
    "SELECT getenv('HOME')",
    "SELECT getvariable('x')",
    "SELECT current_database()",
    "SELECT current_user",
    "SHOW TABLES",
    "DESCRIBE staff",
    "SUMMARIZE staff",
    "SET enable_external_access = true",
    "SET memory_limit = '100GB'",
    "RESET lock_configuration",
    "CALL pragma_version()",
    # writes
    "DELETE FROM staff",
    "UPDATE staff SET hourly_rate = 0",
    "INSERT INTO staff (badge) VALUES ('X')",
    "DROP TABLE staff",
    "CREATE TABLE t AS SELECT * FROM staff",
    "SELECT * INTO t FROM staff",
    "WITH gone AS (DELETE FROM staff RETURNING *) SELECT COUNT(*) FROM gone",
    "SELECT (SELECT COUNT(*) FROM (DELETE FROM staff RETURNING *) d)",
    "ALTER TABLE staff ADD COLUMN x INTEGER",
    "TRUNCATE staff",
    "SELECT nextval('seq_badges')",
    "CHECKPOINT",
    "BEGIN TRANSACTION",
    "CREATE MACRO m(x) AS x",
    # multiple statements and comments
    "SELECT 1; DELETE FROM staff",
    "SELECT 1;; DROP TABLE staff",
    "SELECT 1 -- harmless\n; ATTACH '{tmp}/x.duckdb' AS x",
    "SELECT read_text/**/('{secret}')",
    "/* probe */ SELECT * FROM read_csv('{secret}') -- done",
    # Unicode look-alikes
    "SELECT * FROM ｒｅａｄ_ｃｓｖ('{secret}')",
    "SELECT \"ｃｕｒｒｅｎｔ_ｓｅｔｔｉｎｇ\"('threads')",
    "SELECT * FROM stаff",  # Cyrillic а
    "SELECT * FROM read\u200b_csv('{secret}')",
]

# Resource bombs pass the static check; the connection stops them (timeout, memory limit).
BOMBS = [
    "SELECT COUNT(*) FROM range(100000000000) a",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT COUNT(*) FROM r",
    "SELECT length(string_agg(repeat('x', 100000), '')) FROM range(100000)",
]


def _fill(sql: str, duck: Path) -> str:
    secret = duck.parent / "secret.csv"
    return sql.replace("{secret}", str(secret)).replace("{tmp}", str(duck.parent))


@pytest.mark.parametrize("sql", REFUSED)
def test_probe_refused(duck: Path, sql: str) -> None:
    out = run_agent(duck, probe(_fill(sql, duck)))
    assert out.refused("probe"), out.tool("probe")["result"]
    assert out.leaked() == []
    assert duck_count(duck) == STAFF_ROWS
    assert not (duck.parent / "out.csv").exists() and not (duck.parent / "dump").exists()


@pytest.mark.parametrize("sql", [
    "DELETE FROM staff",
    "WITH gone AS (DELETE FROM staff RETURNING *) SELECT COUNT(*) AS n FROM gone",
    "SELECT COUNT(*) AS n FROM read_csv('{secret}')",
    "SELECT COUNT(*) AS n FROM staff; DROP TABLE staff",
])
def test_submit_refused(duck: Path, sql: str) -> None:
    out = run_agent(duck, submit(_fill(sql, duck)))
    assert out.refused("submit") and out.status != "answered"
    assert out.leaked() == [] and duck_count(duck) == STAFF_ROWS


@pytest.mark.parametrize("sql", BOMBS)
def test_resource_bombs_are_stopped(duck: Path, sql: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIA_QUERY_MEMORY_LIMIT", "100MB")
    out = run_agent(duck, probe(sql), timeout_s=1.0)
    assert out.stopped("probe") and '"rows"' not in out.tool("probe")["result"]
