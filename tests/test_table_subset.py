"""One warehouse table materialized on its own (`warehouse/<table>` can_subset): only that
table is rebuilt (with the tables an enforced foreign key forces along, recorded as such), only
its checks run; a full nightly build still rebuilds everything."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from dagster import AssetKey, AssetSelection, materialize
from dagster_duckdb import DuckDBResource

from dia_assets.agents.schema_creator.build import overrides_path
from dia_assets.agents.schema_creator.incremental import (
    installed_manifest,
    plan_reload,
    subset_manifest,
)
from dia_assets.contracts.manifest import Manifest
from dia_assets.dagster.resources.workspace import WorkspaceResource
from dia_assets.dagster.schema import schema_definitions
from dia_assets.dagster.sensors.schedules import FULL_BUILD
from dia_assets.dagster.tables import manifest_tables
from tests.schema_fixtures import EXAMPLES

TABLES = {"staff", "hospital_departments", "hospital_wards", "payroll", "shifts", "shifts_assignments"}
CHECKS = {"row_count_reconciliation", "column_coverage", "key_validity", "load_integrity", "test_queries"}


def _key(table: str) -> AssetKey:
    return AssetKey(["warehouse", table])


def _run(ws: Path, tables, selection=None, run_config=None):  # noqa: ANN001, ANN202
    assets, checks = schema_definitions(tables)
    return materialize(
        [*assets, *checks], selection=selection, run_config=run_config, raise_on_error=False,
        resources={"workspace": WorkspaceResource(root=str(ws), data_dir=str(EXAMPLES / "data")),
                   "duckdb": DuckDBResource(database=str(ws / "warehouse.duckdb"))},
    )


def _materialized(result) -> dict[AssetKey, dict]:  # noqa: ANN001
    out = {}
    for event in result.get_asset_materialization_events():
        m = event.event_specific_data.materialization
        out[m.asset_key] = {k: v.value for k, v in m.metadata.items()}
    return out


def _reload(ws: Path) -> dict:
    return json.loads((ws / "validation" / "report.json").read_text())["reload"]


def _seeded(ws: Path, interp) -> Path:  # noqa: ANN001
    """A workspace with the interpretation and the example's overrides, as `make demo` seeds it."""
    path = overrides_path(ws)
    path.parent.mkdir(parents=True)
    shutil.copyfile(EXAMPLES / "data" / "overrides.yaml", path)
    (ws / "interpretation.json").write_text(interp.to_json())
    return ws


@pytest.fixture(scope="module")
def built(tmp_path_factory, example_interpretation) -> tuple[Path, list]:  # noqa: ANN001
    """A workspace after a first build, as `make demo` leaves it, and its table assets."""
    ws = _seeded(tmp_path_factory.mktemp("subset") / "ws", example_interpretation)
    mp = pytest.MonkeyPatch()
    mp.delenv("DIA_WAREHOUSE", raising=False)
    result = _run(ws, (), selection=AssetSelection.assets("schema_manifest", "warehouse"))
    assert result.success
    tables = manifest_tables(ws)
    assert {t.name for t in tables} == TABLES
    yield ws, tables
    mp.undo()


def test_a_leaf_table_is_rebuilt_alone_with_only_its_checks(built) -> None:  # noqa: ANN001
    ws, tables = built
    result = _run(ws, tables, selection=[_key("payroll")])
    assert result.success
    assert set(_materialized(result)) == {_key("payroll")}
    checks = {(e.asset_key, e.check_name): e.passed for e in result.get_asset_check_evaluations()}
    assert set(checks) == {(_key("payroll"), c) for c in CHECKS} and all(checks.values())
    reload = _reload(ws)
    assert reload["mode"] == "subset" and reload["reloaded"] == ["payroll"]
    assert reload["reasons"]["payroll"] == "selected: materialized on its own"
    assert set(reload["kept"]) == TABLES - {"payroll"}


def test_a_parent_table_takes_its_enforced_children_along_and_says_so(built) -> None:  # noqa: ANN001
    """DuckDB cannot drop a table that a declared foreign key references: staff's children are
    rebuilt with it; they are recorded as materialized with the reason, and only staff's checks run."""
    ws, tables = built
    result = _run(ws, tables, selection=[_key("hospital_wards")])
    assert result.success
    reload = _reload(ws)
    assert reload["mode"] == "subset" and reload["reloaded"][0] == "hospital_wards"
    forced = set(reload["reloaded"]) - {"hospital_wards"}
    assert forced and "payroll" not in forced and "staff" not in forced  # shifts (and its children)
    materialized = _materialized(result)
    assert set(materialized) == {_key(t) for t in ["hospital_wards", *forced]}
    assert "rebuilt_because" not in materialized[_key("hospital_wards")]
    for table in forced:
        assert "which is rebuilt" in materialized[_key(table)]["rebuilt_because"]
    assert {e.asset_key for e in result.get_asset_check_evaluations()} == {_key("hospital_wards")}


def test_the_nightly_full_build_reloads_every_table(built) -> None:  # noqa: ANN001
    ws, tables = built
    result = _run(ws, tables, run_config=FULL_BUILD)
    assert result.success
    assert set(_materialized(result)) >= {_key(t) for t in TABLES}
    reload = _reload(ws)
    assert reload["mode"] == "full" and set(reload["reloaded"]) == TABLES and reload["fallback"] is None


def test_a_subset_keeps_the_installed_plan_of_the_tables_it_leaves(built) -> None:  # noqa: ANN001
    """What changed in a table nobody selected is not installed by the subset build, and is
    still seen as changed by the next ordinary build."""
    ws, _ = built
    installed = installed_manifest(ws)
    current = Manifest.read(ws / "schema" / "manifest.json")
    edited = current.model_copy(update={"tables": [
        t.model_copy(update={"content_hash": "new"}) if t.name in ("payroll", "staff") else t for t in current.tables]})
    subset = subset_manifest(installed, edited, {"payroll"})
    plans = {t.name: t for t in subset.tables}
    was = {t.name: t for t in installed.tables}
    assert plans["payroll"].content_hash == "new" and plans["staff"] == was["staff"]
    assert plan_reload(installed, subset, {"payroll"}).reload == ["payroll"]
    assert "staff" in plan_reload(subset, edited).reload  # once the subset is installed


def test_one_table_without_a_warehouse_in_place_runs_a_full_build_and_says_so(tmp_path, example_interpretation,
                                                                             monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    ws = _seeded(tmp_path / "ws", example_interpretation)
    assert _run(ws, (), selection=AssetSelection.assets("schema_manifest")).success  # planned, never loaded
    tables = manifest_tables(ws)
    result = _run(ws, tables, selection=[_key("payroll")])
    assert result.success
    reload = _reload(ws)
    assert reload["mode"] == "full" and set(reload["reloaded"]) == {t.name for t in tables}
    materialized = _materialized(result)
    assert set(materialized) == {_key(t.name) for t in tables}
    assert "rebuilt_because" not in materialized[_key("payroll")]
    assert {materialized[_key(t.name)]["rebuilt_because"] for t in tables if t.name != "payroll"} == {
        reload["fallback"]}
    assert {e.asset_key for e in result.get_asset_check_evaluations()} == {_key("payroll")}
