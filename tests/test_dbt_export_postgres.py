"""`dia dbt export` of a PostgreSQL warehouse (issue 34), built for real by dbt-postgres against the
embedded PostgreSQL: the example and the messy file of test_dbt_export_messy.py give DIA's rows in
every refined and reject table, names and types; the schema tests pass and a planted duplicate
fails one; the password is written nowhere. The typed parse rendered for PostgreSQL (pg_render)
is compared with DuckDB's on a corpus of awkward texts: equal but for the differences it names."""

from __future__ import annotations

import json
import os
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import duckdb
import psycopg
import pytest
import sqlglot
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from typer.testing import CliRunner

from dia_assets.agents.schema_creator.dbt_export import ExportError, export_project
from dia_assets.agents.schema_creator.pg_render import FUNCTIONS, to_postgres
from dia_assets.agents.schema_creator.sqlgen import refined_typed_sql
from dia_assets.agents.value_parsing import parse_expression
from dia_assets.cli.app import app
from dia_assets.contracts.interpretation import ValueFormat
from dia_assets.contracts.manifest import Manifest
from dia_assets.pipeline import run
from dia_assets.platform.naming import sql_str
from dia_assets.platform.workspace import Workspace
from tests.dbt_fixtures import (
    PROJECT,
    assert_matches_golden,
    build_messy,
    dbt,
    differences,
    pg_table_columns,
)
from tests.memory_fixtures import fresh_database_url, pg_server  # noqa: F401  (fixture)
from tests.schema_fixtures import EXAMPLES

SECRET = "pw-dia-dbt-7Hq2"  # the embedded server trusts local connections: any password logs in


def _with_password(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=f"{parts.username}:{SECRET}@{parts.netloc.rsplit('@', 1)[-1]}"))


def _export_and_build(ws: Path, url: str, project: Path) -> tuple[int, dict[str, str], dict]:
    out = CliRunner().invoke(app, ["dbt", "export", str(project), "-w", str(ws), "--warehouse", url, "-q"])
    assert out.exit_code == 0, out.output
    code, statuses = dbt(project, "build", env={"DIA_DBT_PG_PASSWORD": SECRET})
    nodes = json.loads((project / "target" / "manifest.json").read_text())  # before another dbt run rewrites it
    return code, statuses, {"ws": ws, "project": project, "url": url, "statuses": statuses, "nodes": nodes,
                            "manifest": Manifest.read(Workspace(ws).installed_manifest)}


@pytest.fixture(scope="module")
def example(tmp_path_factory, pg_server, example_interpretation):  # noqa: F811
    """The example built into PostgreSQL by DIA, exported, built once by `dbt build`."""
    root = tmp_path_factory.mktemp("dbt_pg")
    url = fresh_database_url(pg_server, f"dbt_pg_example_{os.getpid()}")
    result = run(EXAMPLES / "data", root / "ws", warehouse=url, interpretation=example_interpretation,
                 overrides_seed=EXAMPLES / "data" / "overrides.yaml")
    assert result.report.accepted
    code, statuses, built = _export_and_build(root / "ws", _with_password(url), root / "project")
    assert code == 0, statuses
    return built


@pytest.fixture(scope="module")
def messy(tmp_path_factory, pg_server):  # noqa: F811
    root = tmp_path_factory.mktemp("dbt_pg_messy")
    url = fresh_database_url(pg_server, f"dbt_pg_messy_{os.getpid()}")
    build_messy(root, url)
    code, statuses, built = _export_and_build(root / "ws", _with_password(url), root / "project")
    assert code == 0, statuses
    return built


def _same_tables(built: dict) -> tuple[int, int]:
    """Asserts each refined and reject table dbt built equals DIA's; returns the rows compared."""
    refined = rejects = 0
    with psycopg.connect(built["url"]) as con:
        for table in built["manifest"].tables:
            for dia, ours in ((f'public."{table.name}"', f'dbt."{table.name}"'),
                              (f'rejects."{table.name}"', f'dbt_rejects."{table.name}"')):
                assert pg_table_columns(con, dia) == pg_table_columns(con, ours), dia
                assert differences(con, dia, ours) == 0, dia
                n = con.execute(f"SELECT count(*) FROM {dia}").fetchone()[0]
                if dia.startswith("rejects."):
                    rejects += n
                else:
                    refined += n
    return refined, rejects


def test_dbt_postgres_reproduces_every_example_table(example):
    refined, rejects = _same_tables(example)
    assert len(example["manifest"].tables) == 6
    assert refined > 10_000 and rejects > 0  # real rows of both kinds compared
    assert all(s in ("pass", "success") for u, s in example["statuses"].items() if u.startswith("model."))


def test_dbt_postgres_reproduces_every_kind_of_reject(messy):
    _same_tables(messy)
    with psycopg.connect(messy["url"]) as con:
        kinds = con.execute("SELECT _raw_line IS NOT NULL, _row_kept, count(*) FROM dbt_rejects.visits "
                            "GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
    # 2 refused rows, 1 kept with amount NULL, 2 ragged lines from DIA's reject table
    assert kinds == [(False, False, 2), (False, True, 1), (True, False, 2)]
    assert all(s in ("pass", "success") for s in messy["statuses"].values()), messy["statuses"]


def test_schema_tests_pass_and_a_planted_duplicate_fails(example):
    statuses = example["statuses"]
    tests = [u for u in statuses if u.startswith("test.")]
    assert len(tests) > 20
    assert all(s in ("pass", "warn") for u, s in statuses.items() if u in tests)
    assert statuses[next(u for u in tests if ".unique_staff_badge." in u)] == "pass"
    # the planted duplicate, in a copy of the database (the profile follows $DIA_DBT_PG_DBNAME)
    name = conninfo_to_dict(example["url"])["dbname"]
    copy = f"{name}_dup"
    with psycopg.connect(example["url"], autocommit=True) as con:
        con.execute(f'DROP DATABASE IF EXISTS "{copy}"')
        con.execute(f'CREATE DATABASE "{copy}" TEMPLATE "{name}"')
    try:
        with psycopg.connect(make_conninfo(example["url"], dbname=copy), autocommit=True) as con:
            con.execute("INSERT INTO dbt.staff SELECT * FROM dbt.staff LIMIT 1")
        code, results = dbt(example["project"], "test", "--select", "staff",
                            env={"DIA_DBT_PG_PASSWORD": SECRET, "DIA_DBT_PG_DBNAME": copy})
    finally:
        with psycopg.connect(example["url"], autocommit=True) as con:
            con.execute(f'DROP DATABASE IF EXISTS "{copy}" WITH (FORCE)')
    assert code == 1
    assert {u.rsplit(".", 2)[-2] for u, s in results.items() if s == "fail"} == {"unique_staff_badge"}
    assert sum(s == "pass" for s in results.values()) >= 2


def test_the_password_is_written_nowhere(example):
    profile = (example["project"] / "profiles.yml").read_text()
    assert "DIA_DBT_PG_PASSWORD" in profile and "type: postgres" in profile
    for path in example["project"].rglob("*"):
        if path.is_file():
            assert SECRET not in path.read_text(errors="replace"), path


def test_a_format_or_type_without_a_postgres_twin_is_refused_naming_the_column(example, tmp_path):
    manifest = example["manifest"].model_copy(deep=True)
    staff = next(t for t in manifest.tables if t.name == "staff")
    hire = next(c for c in staff.columns if c.name == "hire_date")
    hire.value_format.date_formats = ["%d %b %Y %Z"]
    with pytest.raises(ExportError, match=r"staff\.hire_date: .*%Z"):
        export_project(manifest, None, example["url"], tmp_path / "p")
    hire.value_format.date_formats, hire.type = [], "UINTEGER"  # DuckDB's alone: no PostgreSQL twin
    with pytest.raises(ExportError, match=r"staff\.hire_date: type UINTEGER"):
        export_project(manifest, None, example["url"], tmp_path / "p")


# ---------------------------------------------------------------- the parse, engine against engine

CORPUS = {
    "INTEGER": ["42", "2.5", "-2.5", "1e3", "+5", "007", ".5", "1.", "abc", "", "99999999999", "1,5", "inf"],
    "BIGINT": ["9007199254740993", "12.49"],
    "TINYINT": ["127", "128", "-128.4", "-129", "1e2"],
    "SMALLINT": ["32767", "32768", "-3.5"],
    "DECIMAL(18,2)": ["1.235", "-1.245", "1e-3", "12", "x1", "Infinity", "12345678901234567890"],
    "DOUBLE": ["1e3", "-0.5", ".5", "inf", "-Infinity", "1,5", "abc"],
    "DATE": ["2024-01-05", "2024-1-5", "2024-02-30", "2024-01-05 10:00", "2024-01-05T10:00:00",
             "20240105", "05-01-2024", "Jan 5 2024", "2024/01/05", "epoch", "0000-01-01"],
    "TIMESTAMP": ["2024-01-05 10:00:01", "2024-01-05T07:05", "2024-01-05", "2024-01-05 25:00", "yesterday"],
    "TIMESTAMPTZ": ["2024-01-05T10:00:00Z", "2024-01-05 10:00:00+01", "2024-01-05 10:00", "2024-01-05",
                    "2024-01-05 10:00:00+01:30"],
    "TIME": ["10:00", "7:05:03.5", "10:00:00", "noon", "25:00", "2024-01-05 10:00"],
}
FORMATS = {
    "%d %b %Y": ["05 jan 2024", "5 JAN 2024", "30 feb 2024", "05 January 2024", "05  jan 2024", "05 jan2024"],
    "%d %B %Y": ["05 January 2024", "5 march 2024", "05 Jan 2024"],
    "%d-%b-%y": ["05-jan-69", "05-jan-68", "05-jan-5"],
    "%d/%m/%Y": ["5/1/2024", "05/01/24", "31/04/2024", "005/01/2024", "05/01/2024x"],
    "%b %d, %Y": ["Jan 5, 2024", "Jan  5,2024"],
    "%Y-%m-%d %H:%M:%S": ["2024-01-05 7:5:3", "2024-01-05 24:00:00", "2024-01-05 10:60:00",
                          "2024-01-05 10:00:01.5"],
    "%d.%m.%Y %H:%M": ["5.1.2024 10:30", "5.1.2024"],
}
# what DuckDB's cast reads and these ISO-only guards do not (pg_render.ISO_FORMS, docs/dbt.md)
KNOWN = {("DATE", "2024/01/05"), ("DATE", "epoch"), ("DATE", "0000-01-01"),
         ("TIME", "2024-01-05 10:00")}


def _cases() -> list[tuple[str, str | None, list[str]]]:
    return [*((t, None, values) for t, values in CORPUS.items()),
            *((t, f, values) for f, values in FORMATS.items()
              for t in (("TIMESTAMP", "TIMESTAMPTZ") if "%H" in f else ("DATE",)))]


def _norm(value: object) -> object:
    if isinstance(value, float | Decimal | int | date | datetime | time) or value is None:
        return value
    return str(value)  # DuckDB's dates before year 1 come back as text


def test_rendered_parse_matches_duckdb_but_for_named_forms(pg_server):  # noqa: F811
    """Each text parsed by DuckDB's expression and by its PostgreSQL rendering, read from a table
    on both sides (PostgreSQL folds constants at plan time, which a model never sees). DuckDB runs
    in UTC as DIA's load does, PostgreSQL elsewhere: a time without offset is UTC all the same."""
    url = fresh_database_url(pg_server, f"dbt_pg_parse_{os.getpid()}")
    body = FUNCTIONS.split("{% macro dia_functions() %}")[1].split("{% endmacro %}")[0]
    duck = duckdb.connect()
    duck.execute("SET TimeZone = 'UTC'")
    differ = set()
    with psycopg.connect(url, autocommit=True) as pg:
        pg.execute(body.replace("{{ adapter.quote(target.schema) }}", "fns"))
        pg.execute("SET timezone = 'America/New_York'")
        for sql_type, fmt, texts in _cases():
            rows = ", ".join(f"({i}, {sql_str(v)})" for i, v in enumerate(texts))
            for con in (pg, duck):
                con.execute("DROP TABLE IF EXISTS corpus")
                con.execute("CREATE TABLE corpus (i INTEGER, v VARCHAR)")
                con.execute(f"INSERT INTO corpus VALUES {rows}")
            expr = parse_expression("v", sql_type, ValueFormat(date_formats=[fmt] if fmt else []))
            sql = f"SELECT {expr} FROM corpus ORDER BY i"
            ours = [r[0] for r in pg.execute(to_postgres(sql, "fns")).fetchall()]
            theirs = [r[0] for r in duck.execute(sql).fetchall()]
            differ |= {(f"{sql_type} {fmt or ''}".strip(), v) for v, a, b in zip(texts, ours, theirs, strict=True)
                       if _norm(a) != _norm(b)}
    assert differ == KNOWN


GOLDEN = Path(__file__).parent / "fixtures" / "dbt" / "examples_postgres"


def test_exported_postgres_project_matches_golden(example):
    """The PostgreSQL project, byte for byte (as tests/test_dbt_export.py holds the DuckDB one).
    Refresh with DIA_UPDATE_SNAPSHOTS=1 and review the diff."""
    assert_matches_golden(example["project"], GOLDEN)


def test_models_are_the_builders_load_rendered_for_postgres(example):
    """dbt's compiled SQL of each model is the builder's own DuckDB SELECT over the staging table,
    rendered by pg_render (equal as parsed by sqlglot), with dia_strptime in dbt's schema."""
    nodes = example["nodes"]
    strptime = 0
    for table in example["manifest"].tables:
        model = nodes["nodes"][f"model.{PROJECT}.{table.name}"]
        staging = nodes["sources"][f"source.{PROJECT}.staging.{table.name}"]["relation_name"]
        expected = to_postgres(refined_typed_sql(table, staging=staging), '"dbt"')
        assert sqlglot.parse_one(model["compiled_code"], read="postgres") == \
            sqlglot.parse_one(expected, read="postgres"), table.name
        strptime += model["compiled_code"].count('"dbt".dia_strptime(')
    assert strptime >= 4  # hire_date's three formats, opened_on's one


def test_dbt_tasks_refuses_a_postgres_warehouse_without_printing_its_url(example, tmp_path):
    out = CliRunner().invoke(app, ["dbt", "tasks", str(tmp_path / "t"), "-w", str(example["ws"]),
                                   "--warehouse", example["url"]])
    assert out.exit_code == 2 and "needs a DuckDB warehouse" in out.stderr
    assert SECRET not in out.output
