"""`dia dbt export` of a Spark warehouse (issue 34), built for real by dbt-spark (session method, a
local Spark in dbt's own process): the example built into a Spark warehouse by DIA, exported and
built by `dbt build`, gives DIA's rows in every refined and reject table (both read from their
Parquet by DuckDB), names and types; the schema tests pass and a planted duplicate fails one. The
typed parse rendered for Spark (spark_render) is compared with DuckDB's on a corpus of awkward
texts: equal but for the differences it names."""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest
import sqlglot
from typer.testing import CliRunner

from dia_assets.agents.schema_creator.dbt_export import ExportError, export_project
from dia_assets.agents.schema_creator.spark_render import to_spark
from dia_assets.agents.schema_creator.sqlgen import refined_typed_sql
from dia_assets.agents.value_parsing import parse_expression
from dia_assets.cli.app import app
from dia_assets.contracts.interpretation import ValueFormat
from dia_assets.contracts.manifest import Manifest
from dia_assets.pipeline import run
from dia_assets.platform.naming import sql_str
from dia_assets.platform.warehouse.spark import (
    current_build,
    end_session,
    new_session,
    parse_target,
)
from dia_assets.platform.workspace import Workspace
from tests.dbt_fixtures import PROJECT, build_messy, dbt, differences, table_columns
from tests.schema_fixtures import EXAMPLES
from tests.spark_fixtures import require_spark, spark_target

pytestmark = [pytest.mark.spark, pytest.mark.heavy]


def _export_and_build(tmp: Path) -> dict:
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
    return _export_and_build(tmp)


@pytest.fixture(scope="module")
def messy(tmp_path_factory):
    """The messy file (refused, kept and ragged rows, '{%' in the data, a split wide table)."""
    require_spark()
    tmp = tmp_path_factory.mktemp("dbt_spark_messy")
    build_messy(tmp, spark_target(tmp / "root"))
    return _export_and_build(tmp)


def _parquet(folder: Path) -> str:
    return f"read_parquet({sql_str(str(folder / '*.parquet'))})"


def _same_tables(built: dict) -> tuple[int, int]:
    """Asserts each refined and reject table dbt built equals DIA's; returns the rows compared."""
    assert built["code"] == 0, built["statuses"]
    root, build = built["root"], built["build"]
    dbt_home = root / "_dbt" / "warehouse"
    con = duckdb.connect()
    refined = rejects = 0
    for table in built["manifest"].tables:
        for dia, ours in ((root / build / "refined" / table.name, dbt_home / "dbt.db" / table.name),
                          (root / build / "rejects" / table.name, dbt_home / "dbt_rejects.db" / table.name)):
            con.execute(f"CREATE OR REPLACE VIEW dia AS SELECT * FROM {_parquet(dia)}")
            con.execute(f"CREATE OR REPLACE VIEW ours AS SELECT * FROM {_parquet(ours)}")
            assert table_columns(con, "dia") == table_columns(con, "ours"), dia
            assert differences(con, "dia", "ours") == 0, dia
            n = con.execute("SELECT count(*) FROM dia").fetchone()[0]
            if dia.parent.name == "rejects":
                rejects += n
            else:
                refined += n
    return refined, rejects


def test_dbt_spark_reproduces_every_example_table(example):
    refined, rejects = _same_tables(example)
    assert len(example["manifest"].tables) == 6
    assert refined > 10_000 and rejects > 0  # real rows of both kinds compared
    assert all(s == "success" for u, s in example["statuses"].items() if u.startswith("model."))


def test_dbt_spark_reproduces_every_kind_of_reject(messy):
    _same_tables(messy)
    visits = messy["root"] / "_dbt" / "warehouse" / "dbt_rejects.db" / "visits"
    kinds = duckdb.execute(f"SELECT _raw_line IS NOT NULL, _row_kept, count(*) FROM {_parquet(visits)} "
                           "GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
    # 2 refused rows, 1 kept with amount NULL, 2 ragged lines from DIA's reject table
    assert kinds == [(False, False, 2), (False, True, 1), (True, False, 2)]
    assert all(s in ("pass", "success") for s in messy["statuses"].values()), messy["statuses"]


def test_schema_tests_pass_and_a_planted_duplicate_fails(example):
    statuses = example["statuses"]
    tests = [u for u in statuses if u.startswith("test.")]
    assert len(tests) > 20
    assert all(s in ("pass", "warn") for u, s in statuses.items() if u in tests), statuses
    assert statuses[next(u for u in tests if ".unique_staff_badge." in u)] == "pass"
    staff = example["root"] / "_dbt" / "warehouse" / "dbt.db" / "staff"
    planted = staff / "part-planted-duplicate.parquet"
    duckdb.execute(f"COPY (SELECT * FROM {_parquet(staff)} LIMIT 1) TO {sql_str(str(planted))} (FORMAT parquet)")
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


# ---------------------------------------------------------------- the parse, engine against engine

CORPUS = {
    "INTEGER": ["42", "2.5", "-2.5", "1e3", "+5", "007", ".5", "1.", "abc", "", "99999999999", "1,5", "inf",
                " 5 ", "1_000", "0x10"],
    "BIGINT": ["9007199254740993", "12.49", "2.4999999999999"],
    "TINYINT": ["127", "128", "-128.4", "-129", "1e2"],
    "SMALLINT": ["32767", "32768", "-3.5"],
    "DECIMAL(18,2)": ["1.235", "-1.245", "1e-3", "12", "x1", "Infinity", "NaN", "12345678901234567890"],
    "DOUBLE": ["1e3", "-0.5", ".5", "inf", "-Infinity", "NaN", "1,5", "abc", "1d", "1f", "0x10"],
    "BOOLEAN": ["t", "F", "1", "0", "yes", "No", "y", "n", "TRUE", " true", "on", "2"],
    "DATE": ["2024-01-05", "2024-1-5", "2024-02-30", "2024-01-05 10:00", "2024-01-05T10:00:00",
             "20240105", "05-01-2024", "Jan 5 2024", "2024/01/05", "epoch", "2024-01-05 junk"],
    "TIMESTAMP": ["2024-01-05 10:00:01", "2024-01-05T07:05", "2024-01-05", "2024-01-05 25:00", "yesterday",
                  "2024-01-05 10:00:01.123456"],
    "TIMESTAMPTZ": ["2024-01-05T10:00:00Z", "2024-01-05 10:00:00+01", "2024-01-05 10:00", "2024-01-05",
                    "2024-01-05 10:00:00+01:30"],
    "TIME": ["10:00", "7:05:03.5", "10:00:00", "noon", "25:00", "2024-01-05 10:00", "07:05:03.1234567", "7:5",
             "24:00:00", "24:00:01", "23:59:60", "10:00:00.000100", " 10:00"],
}
FORMATS = {
    "%d %b %Y": ["05 jan 2024", "5 JAN 2024", "30 feb 2024", "05 January 2024", "05  jan 2024", "05 jan2024"],
    "%d %B %Y": ["05 January 2024", "5 march 2024", "05 Jan 2024"],
    "%d-%b-%y": ["05-jan-69", "05-jan-68", "05-jan-5"],
    "%d/%m/%Y": ["5/1/2024", "05/01/24", "31/04/2024", "005/01/2024", "05/01/2024x"],
    "%b %d, %Y": ["Jan 5, 2024", "Jan  5,2024"],
    "%Y-%m-%d %H:%M:%S": ["2024-01-05 7:5:3", "2024-01-05 24:00:00", "2024-01-05 10:60:00",
                          "2024-01-05 10:00:60", "2024-01-05 10:00:01.5"],
    "%d.%m.%Y %H:%M": ["5.1.2024 10:30", "5.1.2024"],
}
# what DuckDB's cast reads and these renderings do not (spark_render, docs/dbt.md): DuckDB's
# integer literals with underscores or in hexadecimal, its dates with slashes and 'epoch', a
# timestamp's time of day as a TIME
KNOWN = {("INTEGER", "1_000"), ("INTEGER", "0x10"), ("DATE", "2024/01/05"), ("DATE", "epoch"),
         ("TIME", "2024-01-05 10:00")}


def _cases() -> list[tuple[str, str | None, list[str]]]:
    return [*((t, None, values) for t, values in CORPUS.items()),
            *((t, f, values) for f, values in FORMATS.items()
              for t in (("TIMESTAMP", "TIMESTAMPTZ") if "%H" in f else ("DATE",)))]


def _norm(value: object) -> object:
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.replace(tzinfo=None) - value.utcoffset()
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, float | Decimal | int | date) or value is None:
        return value
    return str(value)


def test_rendered_parse_matches_duckdb_but_for_named_forms(tmp_path):
    """Each text parsed by DuckDB's expression and by its Spark rendering, in a Spark session
    with ANSI mode on (Spark 4's default; dbt-spark turns it off: try_cast means the same in
    both). Both run in UTC, as DIA's load and the export's profile do."""
    require_spark()
    target = parse_target(spark_target(tmp_path))
    spark = new_session(target)
    duck = duckdb.connect()
    duck.execute("SET TimeZone = 'UTC'")
    differ = set()
    try:
        spark.conf.set("spark.sql.ansi.enabled", "true")
        for sql_type, fmt, texts in _cases():
            rows = ", ".join(f"({i}, {sql_str(v)})" for i, v in enumerate(texts))
            duck.execute("CREATE OR REPLACE TABLE corpus (i INTEGER, v VARCHAR)")
            duck.execute(f"INSERT INTO corpus VALUES {rows}")
            spark.createDataFrame(list(enumerate(texts)), "i INT, v STRING").createOrReplaceTempView("corpus")
            expr = parse_expression("v", sql_type, ValueFormat(date_formats=[fmt] if fmt else []))
            sql = f"SELECT {expr} FROM corpus ORDER BY i"
            ours = [r[0] for r in spark.sql(to_spark(sql)).collect()]
            if sql_type == "TIME":  # DIA's Spark warehouse holds a TIME as DuckDB's text of it
                sql = f"SELECT CAST({expr} AS VARCHAR) FROM corpus ORDER BY i"
            theirs = [r[0] for r in duck.execute(sql).fetchall()]
            differ |= {(f"{sql_type} {fmt or ''}".strip(), v) for v, a, b in zip(texts, ours, theirs, strict=True)
                       if _norm(a) != _norm(b)}
    finally:
        end_session(target, spark)
    assert differ == KNOWN
