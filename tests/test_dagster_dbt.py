"""`DIA_DBT_PROJECT` (issue 34): the refined tables built by an exported dbt project through
dagster-dbt, for real (dbt-core + dbt-duckdb in a child process, offline). One asset per model keyed
`warehouse/<table>`, the project's tests as asset checks; an expert's edit to a model reaches the
installed warehouse at the next materialization; a failing test installs nothing."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import duckdb
import pytest
from dagster import AssetKey, AssetsDefinition, DagsterInstance, Definitions
from typer.testing import CliRunner

from dia_assets.cli.app import app
from dia_assets.contracts.manifest import Manifest
from dia_assets.pipeline import run
from dia_assets.platform.workspace import Workspace
from tests.dbt_fixtures import differences
from tests.schema_fixtures import EXAMPLES

TABLES = {"staff", "hospital_departments", "hospital_wards", "payroll", "shifts", "shifts_assignments"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The example built by DIA and exported by `dia dbt export`; dbt runs offline."""
    root = tmp_path_factory.mktemp("dagster_dbt")
    ws = root / "ws"
    assert run(EXAMPLES / "data", ws, overrides_seed=EXAMPLES / "data" / "overrides.yaml").report.accepted
    project = root / "exported"
    out = CliRunner().invoke(app, ["dbt", "export", str(project), "-w", str(ws)])
    assert out.exit_code == 0, out.output
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
        yield {"root": root, "ws": ws, "project": project, "instance": DagsterInstance.ephemeral(),
               "manifest": Manifest.read(Workspace(ws).installed_manifest)}


def _project(exported: dict, name: str) -> Path:
    """A copy of the export for one test (the expert's folder)."""
    copy = exported["root"] / name
    shutil.copytree(exported["project"], copy, ignore=shutil.ignore_patterns("target", "logs"))
    return copy


def _dbt_assets(exported: dict, project: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Definitions, AssetsDefinition]:
    """The code location with DIA_DBT_PROJECT set, and its dbt multi-asset."""
    from dia_assets.definitions import build_defs

    monkeypatch.setenv("DIA_DBT_PROJECT", str(project))
    monkeypatch.setenv("DIA_WORKSPACE", str(exported["ws"]))
    defs = build_defs(exported["ws"])
    graph = defs.resolve_asset_graph()
    return defs, next(a for a in graph.assets_defs if a.is_executable and a.node_def.name == "dbt_warehouse")


def _materialize(exported: dict, found: tuple[Definitions, AssetsDefinition]):  # noqa: ANN202
    """The dbt models materialized by the code location's own asset job (its resources and checks)."""
    defs, assets = found
    return defs.resolve_implicit_global_asset_job_def().execute_in_process(
        instance=exported["instance"], asset_selection=sorted(assets.keys), raise_on_error=False)


def _checks(result, severity: str | None = None) -> dict[str, bool]:  # noqa: ANN001
    """`check@asset` -> passed, for every check the run evaluated (of one severity: ERROR, WARN)."""
    return {f"{e.check_name}@{e.asset_key.to_user_string()}": e.passed for e in result.get_asset_check_evaluations()
            if severity is None or e.severity.value == severity}


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _columns(warehouse: Path, table: str) -> list[str]:
    with duckdb.connect(str(warehouse), read_only=True) as con:
        return [r[0] for r in con.execute(f"DESCRIBE main.{table}").fetchall()]


def test_models_are_the_warehouse_table_assets_and_dbt_tests_their_checks(exported, monkeypatch):
    found = _dbt_assets(exported, _project(exported, "plain"), monkeypatch)
    assets = found[1]
    assert assets.keys == {AssetKey(["warehouse", t]) for t in TABLES} | {AssetKey(["rejects", t]) for t in TABLES}
    check_keys = {(k.asset_key.path[-1], k.name) for k in assets.check_keys}
    # every key's unique and not_null test, on the table it tests
    assert ("staff", "unique_staff_badge") in check_keys
    assert ("staff", "not_null_staff_badge") in check_keys
    assert sum(k.asset_key.path[0] == "warehouse" for k in assets.check_keys) >= 2 * len(TABLES)
    # staging comes from DIA's own build, the single `warehouse` asset
    deps = {d for key in assets.keys for d in assets.asset_deps[key]}
    assert AssetKey("warehouse") in deps
    assert "DIA_DBT_PROJECT" in found[0].resolve_asset_graph().get(AssetKey("warehouse")).description

    warehouse = Workspace(exported["ws"]).warehouse
    with duckdb.connect(str(warehouse), read_only=True) as con:
        before = {t: con.execute(f"SELECT count(*) FROM main.{t}").fetchone()[0] for t in TABLES}
    result = _materialize(exported, found)
    assert result.success
    materialized = {m.asset_key for m in result.get_asset_materialization_events()}
    assert materialized == assets.keys
    dbt_checks = {f"{k.name}@{k.asset_key.to_user_string()}" for k in assets.check_keys}
    checks = {name: ok for name, ok in _checks(result).items() if name in dbt_checks}
    assert checks.keys() == dbt_checks
    # the tests of severity error pass; a warning is a foreign key validation lets orphans pass
    # (payroll pays former employees, allowed by the expert's override)
    errors = {name: ok for name, ok in _checks(result, "ERROR").items() if name in dbt_checks}
    assert len(errors) > 20 and all(errors.values()), errors
    warned = sorted(name for name, ok in _checks(result, "WARN").items() if not ok)
    print(f"warnings: {warned}")
    assert all(name.startswith("relationships_") for name in warned)
    with duckdb.connect(str(warehouse), read_only=True) as con:
        for table in TABLES:
            # the installed table is dbt's, with DIA's rows
            assert con.execute(f"SELECT count(*) FROM main.{table}").fetchone()[0] == before[table]
            assert differences(con, f"main.{table}", f"dbt.{table}") == 0
        # dbt's tables carry no DuckDB key constraints: the tests above hold the keys
        assert con.execute("SELECT count(*) FROM duckdb_constraints() WHERE schema_name = 'main' "
                           "AND constraint_type IN ('PRIMARY KEY', 'FOREIGN KEY')").fetchone()[0] == 0
    print(f"dbt built {len(materialized)} assets with {len(checks)} checks ({len(errors)} of severity error); "
          f"rows {before}")


def test_an_experts_edit_to_a_model_reaches_the_warehouse(exported, monkeypatch):
    project = _project(exported, "edited")
    model = project / "models" / "refined" / "staff.sql"
    original = model.read_text(encoding="utf-8")
    model.write_text("SELECT *, upper(last_name) AS last_name_upper FROM (\n" + original + ") edited\n"
                     "WHERE role IS DISTINCT FROM 'Porter'\n", encoding="utf-8")
    warehouse = Workspace(exported["ws"]).warehouse
    with duckdb.connect(str(warehouse), read_only=True) as con:
        porters = con.execute("SELECT count(*) FROM main.staff WHERE role = 'Porter'").fetchone()[0]
        total = con.execute("SELECT count(*) FROM main.staff").fetchone()[0]
    found = _dbt_assets(exported, project, monkeypatch)
    result = _materialize(exported, found)
    # dbt built and its tests passed, so the edit is installed ...
    assert {m.asset_key for m in result.get_asset_materialization_events()} == found[1].keys
    assert "last_name_upper" in _columns(warehouse, "staff")
    with duckdb.connect(str(warehouse), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM main.staff WHERE last_name_upper <> upper(last_name)").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM main.staff").fetchone()[0] == total - porters
    # ... and DIA's own per-table checks, on the same `warehouse/<table>` keys, see the rows the
    # filter dropped (they are neither refined nor rejected): the run fails on that blocking check
    checks = _checks(result)
    assert not result.success
    assert checks["row_count_reconciliation@warehouse/staff"] is False
    assert checks["row_count_reconciliation@warehouse/payroll"] is True
    assert checks["key_validity@warehouse/staff"] is True
    print(f"edit installed: staff has last_name_upper, {porters} porters of {total} filtered out; "
          f"DIA checks failing: {sorted(n for n, ok in checks.items() if not ok)}")


def test_a_failing_dbt_test_fails_its_check_and_installs_nothing(exported, monkeypatch):
    project = _project(exported, "broken")
    model = project / "models" / "refined" / "hospital_departments.sql"
    original = model.read_text(encoding="utf-8")
    # one department twice: the key's unique test fails
    model.write_text(f"SELECT * FROM ({original}) a\nUNION ALL\n(SELECT * FROM ({original}) b LIMIT 1)\n",
                     encoding="utf-8")
    warehouse = Workspace(exported["ws"]).warehouse
    before = _digest(warehouse)
    result = _materialize(exported, _dbt_assets(exported, project, monkeypatch))
    assert not result.success
    checks = _checks(result)
    assert checks["unique_hospital_departments_department_code@warehouse/hospital_departments"] is False
    assert not result.get_asset_materialization_events()
    assert _digest(warehouse) == before  # the warehouse file is untouched
    kept = warehouse.with_name(warehouse.stem + "-dbt-rejected" + warehouse.suffix)
    with duckdb.connect(str(kept), read_only=True) as con:  # dbt's failed build, kept for inspection
        assert con.execute("SELECT count(*) - count(DISTINCT department_code) FROM dbt.hospital_departments"
                           ).fetchone()[0] == 1
    failed = sorted(name for name, ok in checks.items() if not ok)
    print(f"failed checks: {failed}")


def test_a_model_the_expert_adds_is_parsed_into_its_own_asset(exported, monkeypatch):
    """The manifest is parsed again when a file of the project changed: a new model shows at the
    next load, keyed `dbt/<name>`, downstream of the table it reads."""
    from dia_assets.agents.schema_creator.dbt_project import prepare_manifest

    project = _project(exported, "added")
    manifest = prepare_manifest(project)
    parsed = manifest.stat().st_mtime_ns
    assert prepare_manifest(project).stat().st_mtime_ns == parsed  # unchanged project: no parse
    (project / "models" / "staff_by_role.sql").write_text(
        "SELECT role, count(*) AS n FROM {{ ref('staff') }} GROUP BY role\n", encoding="utf-8")
    _defs, assets = _dbt_assets(exported, project, monkeypatch)
    added = AssetKey(["dbt", "staff_by_role"])
    assert added in assets.keys
    assert AssetKey(["warehouse", "staff"]) in assets.asset_deps[added]


def test_a_postgresql_warehouse_is_refused_without_its_password(tmp_path):
    """DIA_DBT_PROJECT installs by swapping in a built copy of a DuckDB file: a PostgreSQL
    warehouse is refused by name (its export is built by `dbt build` instead), URL redacted."""
    from dagster import Failure

    from dia_assets.dagster.dbt_models import _build_and_install

    with pytest.raises(Failure, match="DuckDB warehouses only") as err:
        next(_build_and_install(None, tmp_path, "postgresql://dia:s3cret@db:5432/wh", None, []))  # type: ignore[arg-type]
    assert "s3cret" not in str(err.value.description) and "PostgreSQL" in str(err.value.description)
