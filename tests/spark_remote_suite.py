"""The checks a remote Spark warehouse passes, shared by the Spark Connect and the standalone
cluster tests (one server per test module): a small build (two HR tables) with DIA_WAREHOUSE
naming it, equal to the DuckDB build of the same files, read through the agent's read-only
connection, which refuses writes and files, caps rows and cancels a long query."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from dia_assets.pipeline import run
from dia_assets.platform.warehouse import QueryTimeout, connect
from dia_assets.platform.warehouse.spark import current_build, parse_target

HR = Path(__file__).parent / "fixtures" / "datasets" / "hr" / "raw"
TABLES = ("regions", "countries")  # one foreign key: validation checks it
SLOW_SQL = "SELECT COUNT(*) FROM range(100000000000) a CROSS JOIN range(1000) b"


def build_both(tmp: Path, target: str) -> dict:
    """The same four files built on DuckDB and, with DIA_WAREHOUSE=target, on Spark."""
    data = tmp / "data"
    data.mkdir()
    for table in TABLES:
        shutil.copy(HR / f"{table}.csv", data)
    duck = run(data, tmp / "ws-duckdb")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("DIA_WAREHOUSE", target)
        spark = run(data, tmp / "ws-spark")
    return {"duck": duck, "spark": spark, "target": target, "tmp": tmp}


class RemoteSparkSuite:
    """Subclasses give a module-scoped `built` fixture: `build_both` on their server."""

    @pytest.fixture
    def db(self, built: dict):  # noqa: ANN201
        con = connect(built["target"])
        yield con
        con.close()

    def test_the_build_is_installed_and_equals_the_duckdb_build(self, built: dict, db) -> None:  # noqa: ANN001
        duck, spark = built["duck"], built["spark"]
        assert spark.report.accepted and spark.report.installed and spark.report.dialect == "spark"
        assert {n: a.passed for n, a in spark.report.axes.items()} == {n: a.passed for n, a in duck.report.axes.items()}
        assert spark.report.row_counts == duck.report.row_counts
        assert current_build(parse_target(built["target"]).root) in db.db
        warehouse = duckdb.connect(str(duck.report.warehouse), read_only=True)
        try:
            assert sorted(t.name for t in db.tables()) == sorted(TABLES)
            for table in TABLES:  # the version's Parquet folders, read where the target's jobs run
                expected = sorted((tuple(r) for r in warehouse.execute(f'SELECT * FROM "{table}"').fetchall()), key=repr)
                got = db.query(f"SELECT * FROM `{table}`", max_rows=10_000).rows
                assert sorted(got, key=repr) == expected and expected, table
        finally:
            warehouse.close()

    def test_the_connection_refuses_writes_and_files(self, built: dict, db) -> None:  # noqa: ANN001
        before = db.query("SELECT count(*) FROM regions").rows
        with pytest.raises(PermissionError):
            db.query("INSERT INTO regions SELECT * FROM regions")
        assert db.query("SELECT count(*) FROM regions").rows == before
        # below the read-only check, the session itself reads no file by path
        assert db.spark.conf.get("spark.sql.runSQLOnFiles") == "false"
        root = parse_target(built["target"]).root
        folder = root / str(current_build(root))
        with pytest.raises(Exception, match="(?i)table or view|not found|runSQLOnFiles|UNSUPPORTED_DATASOURCE"):
            db.spark.sql(f"SELECT * FROM parquet.`{folder / 'refined' / 'regions'}`").collect()

    def test_the_row_cap_holds(self, db) -> None:  # noqa: ANN001
        out = db.query("SELECT id FROM range(1000)", max_rows=5)
        assert out.rows == [(i,) for i in range(5)] and out.truncated

    def test_the_timeout_cancels_a_long_query(self, db) -> None:  # noqa: ANN001
        with pytest.raises(QueryTimeout):
            db.query(SLOW_SQL, timeout_s=3)
        # its work was cancelled: every core is free again for the next statement
        assert db.query("SELECT count(*) FROM regions", timeout_s=120).rows[0][0] > 0
