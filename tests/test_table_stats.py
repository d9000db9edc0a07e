"""Column statistics read from an installed table, in DuckDB and PostgreSQL alike: types without
an order (booleans, JSON) get no range, PostgreSQL's `json` (no equality) no distinct count,
and the DuckDB figures are cached per warehouse file, so a new file is read again."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import psycopg

from dia_assets.platform.tables.stats import cached_stats, warehouse_stats
from tests.memory_fixtures import db_url, pg_server  # noqa: F401

ROWS = "(1, 'a', DATE '2024-01-02', true, 1.50), (2, 'b', NULL, false, 2.25), (3, 'b', DATE '2024-03-04', NULL, NULL)"


def test_duckdb_statistics_and_their_cache(tmp_path: Path) -> None:
    warehouse = tmp_path / "w.duckdb"
    with duckdb.connect(str(warehouse)) as con:
        con.execute("CREATE TABLE t (id INTEGER, name VARCHAR, day DATE, flag BOOLEAN, amount DECIMAL(9,2), "
                    "doc JSON)")
        con.execute(f"INSERT INTO t SELECT *, '{{}}' FROM (VALUES {ROWS})")
    (tmp_path / "schema").mkdir()
    stats = cached_stats(tmp_path, warehouse, ["t", "absent"])
    assert set(stats) == {"t"} and stats["t"].rows == 3
    cols = stats["t"].columns
    assert (cols["name"].distinct, cols["name"].nulls, cols["name"].min, cols["name"].max) == (2, 0, "a", "b")
    assert (cols["day"].nulls, cols["day"].min, cols["day"].max) == (1, "2024-01-02", "2024-03-04")
    assert cols["flag"].min is None and cols["flag"].distinct == 2 and cols["flag"].nulls == 1
    assert (cols["amount"].min, cols["amount"].max) == ("1.50", "2.25")
    assert stats["t"].describe("day") == "2 distinct, 33.3% null, range 2024-01-02 .. 2024-03-04"
    assert (tmp_path / "schema" / "table_stats.json").exists()
    # a new build is a new file: the cache does not answer for it
    os.replace(warehouse, tmp_path / "old.duckdb")
    with duckdb.connect(str(warehouse)) as con:
        con.execute("CREATE TABLE t AS SELECT range AS id FROM range(5)")
    assert cached_stats(tmp_path, warehouse, ["t"])["t"].rows == 5


def test_postgres_statistics(db_url: str) -> None:  # noqa: F811
    with psycopg.connect(db_url, autocommit=True) as con:
        con.execute("CREATE TABLE t (id INTEGER, name TEXT, day DATE, flag BOOLEAN, amount NUMERIC(9,2), doc JSON)")
        con.execute(f"INSERT INTO t SELECT *, '{{}}'::json FROM (VALUES {ROWS}) v")
    stats = warehouse_stats(db_url, ["t"])["t"]
    cols = stats.columns
    assert stats.rows == 3 and (cols["name"].distinct, cols["name"].min, cols["name"].max) == (2, "a", "b")
    assert (cols["day"].min, cols["day"].max, cols["day"].nulls) == ("2024-01-02", "2024-03-04", 1)
    assert cols["flag"].min is None and cols["flag"].distinct == 2
    assert cols["doc"].distinct is None and cols["doc"].nulls == 0
    assert (cols["amount"].min, cols["amount"].max) == ("1.50", "2.25")
