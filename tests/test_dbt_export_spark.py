"""`dia dbt export` of a Spark warehouse (issue 34), built for real by dbt-spark (session method, a
local Spark in dbt's own process): the example built into a Spark warehouse by DIA, exported and
built by `dbt build`, gives DIA's rows in every refined and reject table (both read from their
Parquet by DuckDB), names and types; the schema tests pass and a planted duplicate fails one.
The messy file and the parse's corpus are in test_dbt_export_spark_messy.py (another xdist
worker: each dbt run starts its own Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest
import sqlglot
from typer.testing import CliRunner

from dia_assets.agents.schema_creator.dbt_export import ExportError, export_project
from dia_assets.agents.schema_creator.spark_render import to_spark
from dia_assets.agents.schema_creator.sqlgen import refined_typed_sql
from dia_assets.cli.app import app
from dia_assets.contracts.manifest import Manifest
from dia_assets.pipeline import run
from dia_assets.platform.naming import sql_str
from dia_assets.platform.warehouse.spark import current_build
from dia_assets.platform.workspace import Workspace
from tests.dbt_fixtures import PROJECT, dbt, differences, table_columns
from tests.schema_fixtures import EXAMPLES
from tests.spark_fixtures import require_spark, spark_target

pytestmark = [pytest.mark.spark, pytest.mark.heavy]


def export_and_build(tmp: Path) -> dict:
    root, ws, project = tmp / "root", tmp / "ws", tmp / "project"
    target = spark_target(root)
    out = CliRunner().invoke(app, ["dbt", "export", str(project), "-w", str(ws), "--warehouse", target, "-q"])
    assert out.exit_code == 0, out.output
    code, statuses = dbt(project, "build")
    nodes = json.loads((project / "target" / "manifest.json").read_text())
    return {"root": root, "ws": ws, "project": project, "target": target, "code": code, "statuses": statuses,
            "nodes": nodes, "build": current_build(root), "manifest": Manifest.read(Workspace(ws).installed_manifest)}


@pytest.fixture(scope="module")
def example(tmp_path_factory, example_interpretation):
    """The example built into a Spark warehouse by DIA, exported, built once by `dbt build`."""
    require_spark()
    tmp = tmp_path_factory.mktemp("dbt_spark")
    result = run(EXAMPLES / "data", tmp / "ws", warehouse=spark_target(tmp / "root"),
                 interpretation=example_interpretation, overrides_seed=EXAMPLES / "data" / "overrides.yaml")
    assert result.report.accepted
    return export_and_build(tmp)


def parquet_files(folder: Path) -> str:
    return f"read_parquet({sql_str(str(folder / '*.parquet'))})"


def same_tables(built: dict) -> tuple[int, int]:
    """Asserts each refined and reject table dbt built equals DIA's; returns the rows compared."""
    assert built["code"] == 0, built["statuses"]
    root, build = built["root"], built["build"]
    dbt_home = root / "_dbt" / "warehouse"
    con = duckdb.connect()
    refined = rejects = 0
    for table in built["manifest"].tables:
        for dia, ours in ((root / build / "refined" / table.name, dbt_home / "dbt.db" / table.name),
                          (root / build / "rejects" / table.name, dbt_home / "dbt_rejects.db" / table.name)):
            con.execute(f"CREATE OR REPLACE VIEW dia AS SELECT * FROM {parquet_files(dia)}")
            con.execute(f"CREATE OR REPLACE VIEW ours AS SELECT * FROM {parquet_files(ours)}")
            assert table_columns(con, "dia") == table_columns(con, "ours"), dia
            assert differences(con, "dia", "ours") == 0, dia
            n = con.execute("SELECT count(*) FROM dia").fetchone()[0]
            if dia.parent.name == "rejects":
                rejects += n
            else:
                refined += n
    return refined, rejects


def test_dbt_spark_reproduces_every_example_table(example):
    refined, rejects = same_tables(example)
    assert len(example["manifest"].tables) == 6
    assert refined > 10_000 and rejects > 0  # real rows of both kinds compared
    assert all(s == "success" for u, s in example["statuses"].items() if u.startswith("model."))


def test_schema_tests_pass_and_a_planted_duplicate_fails(example):
    statuses = example["statuses"]
    tests = [u for u in statuses if u.startswith("test.")]
    assert len(tests) > 20
    assert all(s in ("pass", "warn") for u, s in statuses.items() if u in tests), statuses
    assert statuses[next(u for u in tests if ".unique_staff_badge." in u)] == "pass"
    staff = example["root"] / "_dbt" / "warehouse" / "dbt.db" / "staff"
    planted = staff / "part-planted-duplicate.parquet"
    duckdb.execute(f"COPY (SELECT * FROM {parquet_files(staff)} LIMIT 1) TO {sql_str(str(planted))} (FORMAT parquet)")
    try:
        code, results = dbt(example["project"], "test", "--select", "staff")
    finally:
        planted.unlink()
    assert code == 1
    assert {u.rsplit(".", 2)[-2] for u, s in results.items() if s == "fail"} == {"unique_staff_badge"}
    assert sum(s == "pass" for s in results.values()) >= 2


def test_models_are_the_builders_load_rendered_for_spark(example):
    """dbt's compiled SQL of each model is the builder's own DuckDB SELECT over the staging table
    (the exported build's database), rendered by spark_render (equal as parsed by sqlglot)."""
    nodes = example["nodes"]
    for table in example["manifest"].tables:
        model = nodes["nodes"][f"model.{PROJECT}.{table.name}"]
        source = nodes["sources"][f"source.{PROJECT}.staging.{table.name}"]
        assert source["schema"] == f"dia_{example['build']}_staging"
        expected = to_spark(refined_typed_sql(table, staging=source["relation_name"]))
        assert sqlglot.parse_one(model["compiled_code"], read="spark") == \
            sqlglot.parse_one(expected, read="spark"), table.name
    assert "dia_spark_source(" in (example["project"] / "dbt_project.yml").read_text()


def test_a_type_or_format_without_a_spark_twin_is_refused_naming_the_column(example, tmp_path):
    manifest = example["manifest"].model_copy(deep=True)
    staff = next(t for t in manifest.tables if t.name == "staff")
    hire = next(c for c in staff.columns if c.name == "hire_date")
    hire.value_format.date_formats = ["%d %b %Y %Z"]
    with pytest.raises(ExportError, match=r"staff\.hire_date: .*%Z.*Spark"):
        export_project(manifest, None, example["target"], tmp_path / "p")
    hire.value_format.date_formats, hire.type = [], "INTERVAL"  # DuckDB's alone: no Spark twin
    with pytest.raises(ExportError, match=r"staff\.hire_date: type INTERVAL has no Spark rendering"):
        export_project(manifest, None, example["target"], tmp_path / "p")
    with pytest.raises(ExportError, match="cluster or Spark Connect"):
        export_project(example["manifest"], None, "sc://127.0.0.1:15002" + str(example["root"]), tmp_path / "q")
