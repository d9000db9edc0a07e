"""PostgreSQL escape attempts, each through the agent's own probe or submit tool. The embedded
server runs as a superuser; the agent must not."""

from __future__ import annotations

import pytest

from tests.security.conftest import pg, pg_count  # noqa: F401 - pytest fixture
from tests.security.harness import STAFF_ROWS, probe, run_agent, submit

REFUSED = [
    # files and programs (issue 11, finding 1: quoting passed the deny-list)
    "SELECT pg_read_file('/etc/passwd')",
    "SELECT \"pg_read_file\"('/etc/passwd')",
    "SELECT \"pg_catalog\".\"pg_read_file\"('/etc/passwd')",
    "SELECT pg_catalog.pg_read_file('/etc/passwd')",
    "SELECT pg_read_binary_file('/etc/passwd')",
    "SELECT * FROM pg_ls_dir('.')",
    "SELECT pg_stat_file('postgresql.conf')",
    "SELECT lo_import('/etc/passwd')",
    "COPY staff TO '/tmp/dia_out.csv'",
    "COPY staff FROM PROGRAM 'id'",
    # finding 4: functions the deny-list missed
    "SELECT query_to_xml('SELECT * FROM staging.secrets', true, true, '')",
    "SELECT table_to_xml('staging.secrets', true, true, '')",
    "SELECT database_to_xml(true, true, '')",
    "SELECT * FROM pg_ls_waldir()",
    "SELECT pg_advisory_lock(42)",
    "SELECT pg_sleep(30)",
    "SELECT pg_terminate_backend(pg_backend_pid())",
    "SELECT set_config('statement_timeout', '0', false)",
    "SELECT dblink('host=example.com', 'SELECT 1')",
    # settings and catalog
    "SELECT current_setting('data_directory')",
    "SELECT \"current_setting\"('data_directory')",
    "SELECT * FROM pg_settings",
    "SELECT * FROM pg_catalog.pg_settings",
    "SELECT version()",
    "SELECT * FROM pg_roles",
    "SELECT * FROM pg_catalog.pg_authid",
    "SELECT * FROM information_schema.tables",
    "SELECT 'pg_authid'::regclass",
    "SELECT current_user",
    "SELECT session_user",
    "SELECT inet_server_addr()",
    "SHOW data_directory",
    "SELECT * FROM staging.secrets",
    # writes, locks and transactions
    "WITH x AS (DELETE FROM staff RETURNING *) SELECT COUNT(*) FROM x",
    "WITH x AS (UPDATE staff SET hourly_rate = 0 RETURNING 1) SELECT 1",
    "SELECT * FROM staff FOR UPDATE",
    "SELECT nextval('seq_badges')",
    "CREATE TEMP TABLE t AS SELECT 1",
    "SET ROLE postgres",
    "RESET ROLE",
    "SET TRANSACTION READ WRITE",
    "COMMIT",
    # multiple statements, comments, quoting tricks
    "SELECT 1; DELETE FROM staff",
    "SELECT $$x$$, pg_read_file('/etc/passwd')",
    "SELECT E'\\'', pg_read_file('/etc/passwd')",
    "SELECT \"ｐｇ_ｒｅａｄ_ｆｉｌｅ\"('/etc/passwd')",
]


@pytest.mark.parametrize("sql", REFUSED)
def test_probe_refused(pg: str, sql: str) -> None:  # noqa: F811
    out = run_agent(pg, probe(sql))
    assert out.refused("probe"), out.tool("probe")["result"]
    assert out.leaked() == [] and pg_count(pg) == STAFF_ROWS


@pytest.mark.parametrize("sql", [
    "UPDATE staff SET hourly_rate = 0",
    "WITH x AS (DELETE FROM staff RETURNING *) SELECT COUNT(*) AS n FROM x",
])
def test_submit_refused(pg: str, sql: str) -> None:  # noqa: F811
    out = run_agent(pg, submit(sql))
    assert out.refused("submit") and pg_count(pg) == STAFF_ROWS


def test_runaway_query_is_stopped(pg: str) -> None:  # noqa: F811
    out = run_agent(pg, probe("SELECT COUNT(*) FROM generate_series(1, 100000000000) g"), timeout_s=1.0)
    assert out.stopped("probe") and '"rows"' not in out.tool("probe")["result"]


def test_nested_comment_runs_only_what_was_checked(pg: str) -> None:  # noqa: F811
    """PostgreSQL nests block comments; whatever a parser makes of this, what runs is the
    statement regenerated from the checked tree, without comments."""
    out = run_agent(pg, probe("SELECT 1 AS n /* /* */ , pg_read_file('/etc/passwd') -- */"))
    assert out.leaked() == [] and "pg_read_file" not in out.tool("probe")["result"]
