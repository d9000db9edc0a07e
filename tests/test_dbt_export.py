"""`dia dbt export` (issue 34): the example build exported as a dbt project, built for real by
dbt-core + dbt-duckdb in a child process (no network: anonymous usage stats off, no `dbt deps`), gives
the same rows in every refined and reject table as DIA's warehouse; its schema tests hold what
validation checks and fail on corrupted data; dbt's parsed lineage equals DIA's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from dia_assets.agents.schema_creator.lineage import select_lineage
from dia_assets.agents.schema_creator.sqlgen import refined_typed_sql, staging_columns
from dia_assets.cli.app import app
from dia_assets.contracts.manifest import Manifest
from dia_assets.pipeline import run
from dia_assets.platform.naming import quote_ident as q
from dia_assets.platform.workspace import Workspace
from tests.dbt_fixtures import PROJECT, assert_matches_golden, dbt, differences, table_columns
from tests.schema_fixtures import EXAMPLES


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The example built by DIA, exported by `dia dbt export`, built once by `dbt build`."""
    root = tmp_path_factory.mktemp("dbt")
    ws = root / "ws"
    report = run(EXAMPLES / "data", ws, overrides_seed=EXAMPLES / "data" / "overrides.yaml")
    assert report.report.accepted
    project = root / "project"
    out = CliRunner().invoke(app, ["dbt", "export", str(project), "-w", str(ws), "--json"])
    assert out.exit_code == 0, out.output
    exported = json.loads(out.stdout)
    code, statuses = dbt(project, "build")
    assert code == 0, statuses
    nodes = json.loads((project / "target" / "manifest.json").read_text())
    return {"ws": ws, "project": project, "exported": exported, "statuses": statuses, "nodes": nodes,
            "manifest": Manifest.read(Workspace(ws).installed_manifest), "warehouse": Workspace(ws).warehouse}


def test_dbt_build_reproduces_every_refined_and_reject_table(built):
    con = duckdb.connect(str(built["warehouse"]), read_only=True)
    try:
        refined_rows = reject_rows = 0
        counts = []
        for table in built["manifest"].tables:
            for dia, ours in ((q(table.name), f"dbt.{q(table.name)}"),
                              (f"rejects.{q(table.name)}", f"dbt_rejects.{q(table.name)}")):
                # names and types; DIA's declared keys are dbt's schema tests (test below)
                assert table_columns(con, dia) == table_columns(con, ours), dia
                n = con.execute(f"SELECT count(*) FROM {dia}").fetchone()[0]
                assert con.execute(f"SELECT count(*) FROM {ours}").fetchone()[0] == n, dia
                assert differences(con, dia, ours) == 0, dia
                counts.append((dia, n))
                if dia.startswith("rejects."):
                    reject_rows += n
                else:
                    refined_rows += n
    finally:
        con.close()
    assert len(built["manifest"].tables) == 6
    assert refined_rows > 10_000 and reject_rows > 0, counts  # real rows of both kinds compared
    print(f"dbt reproduced {refined_rows} refined and {reject_rows} reject rows: {counts}")


def test_refined_models_are_the_schema_creators_typed_load(built):
    """dbt's compiled SQL of each refined model is the builder's own SELECT over the staging table."""
    nodes = built["nodes"]
    for table in built["manifest"].tables:
        model = nodes["nodes"][f"model.{PROJECT}.{table.name}"]
        staging = nodes["sources"][f"source.{PROJECT}.staging.{table.name}"]["relation_name"]
        assert model["compiled_code"].strip() == refined_typed_sql(table, staging=staging)


def test_schema_tests_cover_every_key_and_foreign_key(built):
    tests = [n for n in built["nodes"]["nodes"].values() if n["resource_type"] == "test"]

    def found(model: str, name: str, columns: list[str] | None = None) -> list[dict]:
        out = []
        for t in tests:
            meta = t["test_metadata"]
            if meta["name"] != name or t["attached_node"] != f"model.{PROJECT}.{model}":
                continue
            cols = [t["column_name"]] if t.get("column_name") else [c.strip('"') for c in meta["kwargs"]["columns"]]
            if columns is None or cols == columns:
                out.append(t)
        return out

    manifest = built["manifest"]
    keys = fks = 0
    for table in manifest.tables:
        for col in table.primary_key:
            assert found(table.name, "not_null", [col]), (table.name, col)
        if table.primary_key:
            keys += 1
            unique = "unique" if len(table.primary_key) == 1 else "dia_unique_combination"
            assert found(table.name, unique, table.primary_key), table.name
        for fk in table.foreign_keys:
            fks += 1
            name = "relationships" if len(fk.columns) == 1 else "dia_relationships"
            hits = found(table.name, name, fk.columns)
            assert len(hits) == 1, (table.name, fk.columns)
            assert f"model.{PROJECT}.{fk.ref_table}" in hits[0]["depends_on"]["nodes"]
            # validation lets these orphans pass (allowed or not blocking): a warning, not a failure
            expected = "warn" if fk.allow_orphans or not fk.blocking else "ERROR"
            assert hits[0]["config"]["severity"].lower() == expected.lower()
    assert keys == 6 and fks == 7
    statuses = built["statuses"]
    accepted = [t["unique_id"] for t in tests if t["test_metadata"]["name"] == "accepted_values"]
    assert len(accepted) >= 3 and all(statuses[u] == "pass" for u in accepted)
    # every error-severity test passed on the reproduced warehouse; the warnings are the allowed orphans
    assert all(s in ("pass", "success") for u, s in statuses.items()
               if u.startswith("model.") or built["nodes"]["nodes"][u]["config"]["severity"] == "ERROR")


def test_a_schema_test_fails_on_corrupted_data(built, tmp_path):
    """A duplicate badge with an unknown department in the dbt-built staff table: unique and
    relationships fail (on a copy of the warehouse; the project follows $DIA_DBT_WAREHOUSE)."""
    copy = tmp_path / "corrupt.duckdb"
    shutil.copy(built["warehouse"], copy)
    con = duckdb.connect(str(copy))
    try:
        con.execute("INSERT INTO dbt.staff SELECT * REPLACE ('ZZZ' AS department_code) FROM dbt.staff LIMIT 1")
    finally:
        con.close()
    code, statuses = dbt(built["project"], "test", "--select", "staff", warehouse=copy)
    assert code == 1
    failed = {u.rsplit(".", 2)[-2] for u, s in statuses.items() if s == "fail"}
    assert failed == {"unique_staff_badge",
                      "relationships_staff_department_code___department_code___ref_hospital_departments_"}
    assert sum(s == "pass" for s in statuses.values()) >= 2  # the rest of staff's tests still pass


def test_dbt_lineage_equals_dias_lineage(built):
    """Each model's depends_on (dbt's parser) is the table DIA's lineage reads from, and the
    column lineage of dbt's compiled SQL (sqlglot) is DIA's column lineage (schema/lineage.json)."""
    nodes = built["nodes"]
    dia = json.loads(Workspace(built["ws"]).schema_lineage.read_text())
    for table in built["manifest"].tables:
        model = nodes["nodes"][f"model.{PROJECT}.{table.name}"]
        staging_id = f"source.{PROJECT}.staging.{table.name}"
        assert model["depends_on"]["nodes"] == [staging_id]
        source = nodes["sources"][staging_id]
        schema = {source["database"]: {"staging": {table.name: dict(staging_columns(table))}}}
        traced = select_lineage(model["compiled_code"], schema)
        assert {t for deps in traced.values() for t, _c in deps} == {table.name}
        assert {col: [c for _t, c in deps] for col, deps in traced.items()} == \
            {col: [d["column"] for d in deps] for col, deps in dia[table.name].items()}
        rejects = nodes["nodes"][f"model.{PROJECT}.{table.name}__rejects"]
        assert sorted(rejects["depends_on"]["nodes"]) == [f"source.{PROJECT}.dia_rejects.{table.name}", staging_id]


def test_export_refuses_a_foreign_folder_and_dias_own_schemas(built, tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "dbt_project.yml").write_text("name: mine\n")
    result = CliRunner().invoke(app, ["dbt", "export", str(other), "-w", str(built["ws"])])
    assert result.exit_code == 1 and "did not write" in result.stderr
    result = CliRunner().invoke(app, ["dbt", "export", str(tmp_path / "p"), "-w", str(built["ws"]),
                                      "--schema", "main"])
    assert result.exit_code == 2 and result.stderr.startswith("error: ")
    again = CliRunner().invoke(app, ["dbt", "export", str(built["project"]), "-w", str(built["ws"]), "-q"])
    assert again.exit_code == 0, again.output  # a previous export is rewritten in place


GOLDEN = Path(__file__).parent / "fixtures" / "dbt" / "examples"


def test_exported_project_matches_golden(built):
    """The project's YAML (tests, descriptions, sources) and model SQL, byte for byte, as
    tests/test_sql_goldens.py holds the load SQL (profiles.yml names a temporary path: left out).
    Refresh with DIA_UPDATE_SNAPSHOTS=1 and review the diff."""
    assert_matches_golden(built["project"], GOLDEN)
