"""The whole pipeline on a Spark warehouse (local mode): the same build as on DuckDB, row for
row in every layer, validated on every axis through Spark before it is installed; a version is
installed by switching CURRENT, so a reader that opened on the old version keeps reading it and
a refused build changes nothing; the query agent answers through the gate on Spark."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.query import InMemoryMemory, answer_question
from dia_assets.pipeline import run
from dia_assets.platform.model.litellm import litellm_chat
from dia_assets.platform.warehouse import connect
from dia_assets.platform.warehouse.spark import current_build
from tests.query_fixtures import FAKE_MODEL, call, register_tools
from tests.spark_fixtures import require_spark, spark_target

pytestmark = [pytest.mark.spark, pytest.mark.heavy]
DATA = Path(__file__).parent / "fixtures" / "datasets" / "hr" / "raw"


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict:
    require_spark()
    tmp = tmp_path_factory.mktemp("spark-build")
    duck = run(DATA, tmp / "ws-duckdb")
    root = tmp / "root"
    spark = run(DATA, tmp / "ws-spark", warehouse=spark_target(root))
    return {"duck": duck, "spark": spark, "root": root, "tmp": tmp, "target": spark_target(root)}


def _rows(con, sql: str) -> list[tuple]:  # noqa: ANN001
    return sorted((tuple(r) for r in con.query(sql, max_rows=1_000_000).rows), key=repr)


def test_the_spark_build_is_accepted_and_equals_the_duckdb_build_in_every_layer(builds: dict) -> None:
    duck, spark = builds["duck"], builds["spark"]
    assert spark.report.accepted and spark.report.installed and spark.report.dialect == "spark"
    axes = {name: axis.passed for name, axis in spark.report.axes.items()}
    assert axes == {name: axis.passed for name, axis in duck.report.axes.items()}
    assert set(axes) >= {"row_count_reconciliation", "column_coverage", "key_validity", "load_integrity"}
    assert spark.report.key_validity == duck.report.key_validity  # every key checked by Spark SQL
    assert spark.report.row_counts == duck.report.row_counts
    root, build_id = builds["root"], current_build(builds["root"])
    warehouse = duckdb.connect(str(duck.report.warehouse), read_only=True)
    db = connect(builds["target"])
    try:
        tables = sorted(t.name for t in db.tables())
        assert tables == sorted(r[0] for r in warehouse.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall())
        for table in tables:  # refined, through the agent's own Spark connection
            expected = sorted((tuple(r) for r in warehouse.execute(f'SELECT * FROM "{table}"').fetchall()), key=repr)
            assert _rows(db, f"SELECT * FROM `{table}`") == expected, table
        for layer in ("staging", "rejects"):  # the Parquet Spark reads, against DuckDB's own layer
            for table in tables:
                files = root / build_id / layer / table
                got = duckdb.sql(f"SELECT count(*) FROM read_parquet('{files}/*.parquet')").fetchall()[0][0]
                assert got == warehouse.execute(f'SELECT count(*) FROM {layer}."{table}"').fetchone()[0]
    finally:
        db.close()
        warehouse.close()


def test_lineage_reads_the_spark_build_as_the_duckdb_one(builds: dict) -> None:
    """Row ranges of every table's staged records, and a value traced back to its raw records,
    read through Spark from the installed version's staging layer."""
    from dia_assets.agents.lineage.index import build_index, value_origin, workspace_manifest

    duck = builds["duck"]
    on_duck = build_index(builds["tmp"] / "ws-duckdb", str(duck.report.warehouse))
    on_spark = build_index(builds["tmp"] / "ws-spark", builds["target"])
    assert on_spark.warehouse == "spark://(redacted)"
    ranges = {t.table: t.row_range for t in on_spark.tables}
    assert all(ranges.values()) and ranges == {t.table: t.row_range for t in on_duck.tables}
    manifest = workspace_manifest(builds["tmp"] / "ws-spark")
    traced = value_origin(manifest, builds["target"], "employees", "employee_id", "100")
    assert traced == value_origin(workspace_manifest(builds["tmp"] / "ws-duckdb"), str(duck.report.warehouse),
                                  "employees", "employee_id", "100")
    assert traced.rows == 1 and traced.row_numbers and traced.raw_texts == ["100"], traced


def test_a_reader_keeps_its_version_and_a_refused_build_changes_nothing(builds: dict) -> None:
    root, target, tmp = builds["root"], builds["target"], builds["tmp"]
    before = current_build(root)
    (root / "notes").mkdir()  # the root may hold other folders: builds delete only their own versions
    (root / "0123456789ab").mkdir()
    reader = connect(target)
    try:
        employees = reader.query("SELECT count(*) FROM employees").rows[0][0]
        # an export whose employees reference a department that does not exist: not accepted
        data = tmp / "broken"
        shutil.copytree(DATA, data)
        path = next(data.glob("employees*"))
        with path.open(encoding="utf-8") as fh:
            rows = list(csv.reader(fh))
        department = rows[0].index(next(c for c in rows[0] if c.lower() == "department_id"))
        for row in rows[1:40]:
            row[department] = "999999"
        with path.open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows(rows)
        refused = run(data, tmp / "ws-spark", warehouse=target)
        assert not refused.report.accepted and not refused.report.installed
        assert current_build(root) == before  # CURRENT untouched, the refused version deleted
        assert sorted(p.name for p in root.iterdir() if not p.name.startswith((".", "_"))) == sorted(
            [before, "CURRENT", "notes", "0123456789ab"])
        # an accepted rebuild switches CURRENT; the reader opened before keeps its version
        again = run(DATA, tmp / "ws-spark", warehouse=target)
        assert again.report.accepted and current_build(root) != before
        assert reader.query("SELECT count(*) FROM employees").rows[0][0] == employees
        fresh = connect(target)
        try:
            assert fresh.query("SELECT count(*) FROM employees").rows[0][0] == employees
            assert fresh.db != reader.db  # the new version's database
        finally:
            fresh.close()
    finally:
        reader.close()


def test_the_query_agent_answers_on_spark_through_the_gate(builds: dict) -> None:
    sql = ("SELECT d.department_name, COUNT(*) AS employees FROM employees e JOIN departments d "
           "ON e.department_id = d.department_id GROUP BY d.department_name ORDER BY employees DESC, "
           "d.department_name LIMIT 3")
    register_tools([
        call("declare_contract", kind="analytical", columns=["department_name", "employees"],
             granularity={"description": "department", "key_columns": ["department_name"]},
             order=[{"column": "employees", "direction": "desc"}]),
        call("probe", sql="SELECT * FROM parquet.`/etc`"),
        call("submit", sql="DROP TABLE employees"),
        call("submit", sql=sql),
    ])
    result, trace = answer_question("Which three departments have the most employees?", builds["target"],
                                    chat=litellm_chat(FAKE_MODEL), memory=InMemoryMemory())
    assert result.status == "answered" and result.dialect == "spark"
    assert result.preview[0][0] == "Shipping" and result.preview[0][1] == 45
    assert "write_refused" in trace.trace["failures"]


def test_the_dagster_graph_materializes_on_a_spark_warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """interpretation -> schema_manifest -> warehouse (its checks) -> validation_report ->
    lineage_report in a real Dagster run, with DIA_WAREHOUSE naming Spark."""
    require_spark()
    from dagster import DagsterInstance, materialize

    from dia_assets.dagster.interpretation import interpretation_asset
    from dia_assets.dagster.lineage import lineage_report
    from dia_assets.dagster.resources import LLMResource, WorkspaceResource
    from dia_assets.dagster.resources.warehouse import duckdb_resource
    from dia_assets.dagster.schema import schema_assets, schema_checks

    target = spark_target(tmp_path / "root")
    ws = tmp_path / "ws"
    monkeypatch.setenv("DIA_WAREHOUSE", target)
    monkeypatch.delenv("DIA_MODEL", raising=False)
    result = materialize(
        [interpretation_asset([]), *schema_assets, *schema_checks, lineage_report],
        instance=DagsterInstance.ephemeral(),
        resources={"workspace": WorkspaceResource(root=str(ws), data_dir=str(DATA)),
                   "llm": LLMResource(), "duckdb": duckdb_resource(str(ws))},
    )
    assert result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks and all(checks.values()), checks
    db = connect(target)
    try:
        assert db.query("SELECT count(*) FROM employees").rows == [(107,)]
    finally:
        db.close()
    meta = result.asset_materializations_for_node("lineage_report")[0].metadata
    assert "| employees |" in meta["tables_and_files"].value and "(107 records)" in meta["tables_and_files"].value
