"""Issue 27, finding 1: the catalog through casts. On PostgreSQL any role, the SELECT-only one
included, turns numbers or names into catalog objects with an object-identifier type
(`regclass`, `regnamespace`, `regrole`, ..., `oid`), and every row carries system columns
(`tableoid`, `ctid`, `xmin`). The gate allows types by list and system columns only where a
table really has one, so none of this reaches the engine, however it is spelled or wherever the
statement enters (probe, submit, post-condition, memory probe)."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from dia_assets.agents.query.dialects import PostgresDatabase
from tests.security.conftest import duck_count, lite_count, pg, pg_count  # noqa: F401 - pytest fixture
from tests.security.harness import (
    STAFF_ROWS,
    memory_with_probe,
    post_condition,
    probe,
    read_memory,
    run_agent,
    submit,
)

ISSUE_PROBE = ("SELECT string_agg(CAST(CAST(CAST(n AS INTEGER) AS oid) AS pg_catalog.regclass)::text, ',') "
               "FROM generate_series(16384,16600) g(n)")
# Names only the catalog knows: a staging table, a sequence, a system schema, a built-in role.
CATALOG_NAMES = ("staging.secrets", "seq_badges", "pg_toast", "pg_read_server_files", "departments_pkey")


def _listing(sql: str) -> str:
    return f"SELECT string_agg({sql}::text, ',') AS n FROM generate_series(1, 20000) g(n)"


PG_PROBES = [
    ISSUE_PROBE,
    "SELECT string_agg(CAST(CAST(n AS oid) AS regnamespace)::text, ',') FROM generate_series(1, 20000) g(n)",
    _listing("n::oid::regrole"),
    _listing('n::"regclass"'),
    _listing('CAST(n AS "pg_catalog"."regclass")'),
    _listing("CAST(n AS ｒｅｇｃｌａｓｓ)"),
    _listing("CAST(n AS REGCLASS)"),
    _listing("n::regproc"),
    _listing("n::regprocedure"),
    _listing("n::regtype"),
    _listing("n::regoper"),
    _listing("n::regoperator"),
    _listing("n::regconfig"),
    _listing("n::regdictionary"),
    _listing("n::regcollation"),
    _listing("n::oid"),
    "SELECT regclass 'staging.secrets' IS NOT NULL AS n",
    "SELECT oid '16384' AS n",
    "SELECT 'staging.secrets'::regclass::oid AS n",
    "SELECT COUNT(*) AS n FROM staff WHERE 'staging.secrets'::regclass IS NOT NULL",
    "SELECT CAST(NULL AS staging.secrets) IS NULL AS n",
    "SELECT string_agg(DISTINCT tableoid::regclass::text, ',') AS n FROM staff",
    "SELECT string_agg(DISTINCT tableoid::text, ',') AS n FROM staff",
    'SELECT "tableoid" AS n FROM staff',
    "SELECT s.tableoid AS n FROM staff s",
    "SELECT (s).tableoid AS n FROM staff s",
    "SELECT ctid::text AS n FROM staff",
    "SELECT xmin::text AS n, xmax::text AS m FROM staff",
    "SELECT COUNT(*) AS n FROM staff WHERE cmin IS NOT NULL OR cmax IS NOT NULL",
    "SELECT pg_typeof(badge) = 'staging.secrets' AS n FROM staff",
    "SELECT string_agg(pg_typeof(badge)::oid::text, ',') AS n FROM staff",
]


def test_the_issue_probe_is_live_below_the_gate(pg: str) -> None:  # noqa: F811
    """The SELECT-only role itself lists the catalog this way: only the gate stops it, so the
    probes below test something real. (Object ids are server-wide: the range is read first.)"""
    with psycopg.connect(pg) as con:
        oid = con.execute("SELECT 'staging.secrets'::regclass::oid::int").fetchone()[0]  # type: ignore[index]
    db = PostgresDatabase(pg)
    try:
        listed = str(db.query(ISSUE_PROBE.replace("16384,16600", f"{oid - 20},{oid + 20}"), max_rows=1).rows[0][0])
    finally:
        db.close()
    assert db.role == "dia_query_reader" and "staging.secrets" in listed and "seq_badges" in listed


@pytest.mark.parametrize("sql", PG_PROBES)
def test_postgres_catalog_casts_are_refused(pg: str, sql: str) -> None:  # noqa: F811
    out = run_agent(pg, probe(sql))
    assert out.refused("probe"), out.tool("probe")["result"]
    result = out.tool("probe")["result"]
    assert "type" in result or "system column" in result or "pg_typeof" in result, result
    sent = out.script.sent()
    assert [name for name in CATALOG_NAMES if name in sent and name not in sql] == [] and out.leaked() == []


def test_the_issue_probe_is_refused_through_every_door(pg: str) -> None:  # noqa: F811
    sent = run_agent(pg, submit(ISSUE_PROBE))
    assert sent.refused("submit") and sent.status != "answered"
    check = f"SELECT ({ISSUE_PROBE}) IS NOT NULL"
    post = run_agent(pg, post_condition(check, "CREATE TABLE harmless AS SELECT 1 AS x", "harmless"),
                     allow_writes=True, question="Create a harmless table.")
    assert post.tool("declare_contract")["refused"] or "refused" in post.tool("submit")["result"]
    remembered = run_agent(pg, read_memory(), memory=memory_with_probe(check))
    assert '"refused": true' in remembered.tool("read_memory")["result"]
    for out in (sent, post, remembered):
        assert [name for name in CATALOG_NAMES if name in out.script.sent()] == [] and out.leaked() == []
    assert pg_count(pg) == STAFF_ROWS
    assert pg_count(pg, "SELECT COUNT(*) FROM information_schema.tables WHERE table_name = 'harmless'") == 0


def test_listed_types_still_run_on_postgres(pg: str) -> None:  # noqa: F811
    """The list is not a wall: the casts analysts write pass and run."""
    out = run_agent(pg, probe(
        "SELECT COUNT(*)::int AS n, SUM(hourly_rate)::numeric(10, 2) AS total, "
        "MIN(badge)::text AS first, CAST('2026-01-01' AS date) + 1 AS d, "
        "'{\"a\": 1}'::jsonb ->> 'a' AS j, ARRAY[1, 2]::int[] AS a, 1::pg_catalog.int4 AS i "
        "FROM staff"))
    result = out.tool("probe")["result"]
    assert '"rows"' in result and "198.5" in result and "2026-01-02" in result, result


@pytest.mark.parametrize("sql", [
    "SELECT CAST(1 AS oid) AS n",
    "SELECT 'staff'::regclass AS n",
    "SELECT COUNT(*) AS n FROM staff WHERE rowid >= 0",
    "SELECT CAST(badge AS STRUCT(a regclass)) AS n FROM staff",
    "SELECT CAST(NULL AS mystery_type) AS n",
])
def test_duckdb_types_are_allowed_by_list(duck: Path, sql: str) -> None:
    out = run_agent(duck, probe(sql))
    assert out.refused("probe"), out.tool("probe")["result"]
    assert duck_count(duck) == STAFF_ROWS


@pytest.mark.parametrize("sql", [
    "SELECT CAST(badge AS regclass) AS n FROM staff",
    "SELECT COUNT(*) AS n FROM staff WHERE rowid >= 0",
    "SELECT MAX(_rowid_) AS n FROM staff",
    "SELECT MAX(oid) AS n FROM staff",
])
def test_sqlite_types_and_row_ids_are_allowed_by_list(lite: Path, sql: str) -> None:
    out = run_agent(lite, probe(sql))
    assert out.refused("probe"), out.tool("probe")["result"]
    assert lite_count(lite) == STAFF_ROWS
