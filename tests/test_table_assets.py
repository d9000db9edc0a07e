"""Warehouse tables as assets read from the manifest of a previous build (as dagster-dbt reads
manifest.json): `warehouse/<table>` with its share of the checks, schema and lineage metadata."""

from __future__ import annotations

import shutil
from pathlib import Path

from dagster import AssetKey, asset, materialize
from dagster_duckdb import DuckDBResource

from dia_assets.agents.schema_creator.build import overrides_path, write_plan
from dia_assets.dagster.resources.workspace import WorkspaceResource
from dia_assets.dagster.schema import schema_definitions
from dia_assets.dagster.tables import manifest_tables
from tests.schema_fixtures import EXAMPLES

TABLES = {"staff", "hospital_departments", "hospital_wards", "payroll", "shifts", "shifts_assignments"}


def _materialize(ws: Path, interp, tables=()):  # noqa: ANN001, ANN202
    @asset(name="interpretation")
    def interpretation(workspace: WorkspaceResource) -> None:
        workspace.path("interpretation.json").write_text(interp.to_json())

    assets, checks = schema_definitions(tables, interp)
    return materialize(
        [interpretation, *assets, *checks],
        resources={"workspace": WorkspaceResource(root=str(ws), data_dir=str(EXAMPLES / "data")),
                   "duckdb": DuckDBResource(database=str(ws / "warehouse.duckdb"))},
        raise_on_error=False,
    )


def _built_workspace(tmp_path: Path, interp, seed_overrides: bool) -> Path:  # noqa: ANN001
    """A workspace after a first build (single `warehouse` asset), as `make demo` leaves it."""
    ws = tmp_path / "ws"
    if seed_overrides:
        path = overrides_path(ws)
        path.parent.mkdir(parents=True)
        shutil.copyfile(EXAMPLES / "data" / "overrides.yaml", path)
    _materialize(ws, interp)
    return ws


def test_tables_from_the_manifest_are_assets_with_checks_schema_and_lineage(tmp_path, example_interpretation, monkeypatch):
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    ws = _built_workspace(tmp_path, example_interpretation, seed_overrides=True)
    tables = manifest_tables(ws)
    assert {t.name for t in tables} == TABLES
    result = _materialize(ws, example_interpretation, tables)
    assert result.success
    materialized = {m.asset_key for m in result.get_asset_materialization_events() and
                    [e.event_specific_data.materialization for e in result.get_asset_materialization_events()]}
    assert {AssetKey(["warehouse", t]) for t in TABLES} <= materialized
    assert AssetKey("warehouse") not in materialized
    checks = {(e.asset_key.path[-1], e.check_name): e for e in result.get_asset_check_evaluations()}
    assert len(checks) == 5 * len(TABLES) and all(e.passed for e in checks.values())
    # each table's check speaks of that table only, with numbers for the Plots panel
    rows = checks[("staff", "row_count_reconciliation")]
    assert rows.description.startswith("staff: 405 = 400 refined") and "payroll" not in rows.description
    assert rows.metadata["refined"].value == 400 and rows.metadata["duplicates_removed"].value == 5
    assert checks[("payroll", "test_queries")].metadata["checked"].value >= 3

    meta = result.asset_materializations_for_node("warehouse")
    by_key = {m.asset_key.path[-1]: m.metadata for m in meta}
    assert by_key["staff"]["dagster/row_count"].value == 400
    schema = {c.name: c for c in by_key["payroll"]["dagster/column_schema"].value.columns}
    assert "references staff.badge" in schema["badge"].constraints.other
    assert "distinct" in schema["gross_pay"].description and "payroll.parquet.gross_pay" in schema["gross_pay"].description
    staff = {c.name: c for c in by_key["staff"]["dagster/column_schema"].value.columns}
    assert staff["badge"].constraints.other == ["primary key"] and not staff["badge"].constraints.nullable
    lineage = by_key["payroll"]["column_lineage"].value
    assert lineage.startswith("| column | <- from file.column | parse applied |")
    assert "| gross_pay | payroll.parquet.gross_pay | cast to DECIMAL" in lineage


def test_a_failing_key_fails_only_its_tables_check(tmp_path, example_interpretation, monkeypatch):
    # No overrides: payroll's orphan badges are not allowed, so payroll's key_validity fails
    # (blocking: no validation_report), while staff's keys pass.
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    ws = tmp_path / "ws"
    write_plan(example_interpretation, ws)  # a manifest, as a previous planning step left it
    result = _materialize(ws, example_interpretation, manifest_tables(ws))
    checks = {(e.asset_key.path[-1], e.check_name): e for e in result.get_asset_check_evaluations()}
    assert not checks[("payroll", "key_validity")].passed
    assert checks[("payroll", "key_validity")].metadata["orphan_rows"].value > 0
    assert checks[("staff", "key_validity")].passed
    assert not result.asset_materializations_for_node("validation_report")


def test_without_a_manifest_the_graph_loads_with_one_warehouse_asset(tmp_path):
    from dia_assets.definitions import build_defs

    graph = build_defs(tmp_path / "empty").resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert "warehouse" in keys and not any(k.startswith("warehouse/") for k in keys)


def test_code_location_has_a_table_asset_per_manifest_table(tmp_path, example_interpretation, monkeypatch):
    from dia_assets.definitions import build_defs

    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    ws = _built_workspace(tmp_path, example_interpretation, seed_overrides=True)
    graph = build_defs(ws).resolve_asset_graph()
    keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert {f"warehouse/{t}" for t in TABLES} <= keys and "warehouse" not in keys
    payroll = graph.get(AssetKey(["warehouse", "payroll"]))
    assert {p.to_user_string() for p in payroll.parent_keys} == {"schema_manifest", "raw_files"}
    assert {c.name for c in payroll.check_keys} == {
        "row_count_reconciliation", "column_coverage", "key_validity", "load_integrity", "test_queries"}
    assert {AssetKey(["warehouse", t]) for t in TABLES} <= set(graph.get(AssetKey("query_result")).parent_keys)
    assert {AssetKey(["warehouse", t]) for t in TABLES} == set(graph.get(AssetKey("validation_report")).parent_keys)


def test_table_metadata_is_read_from_the_installed_table_not_the_source(tmp_path, example_interpretation, monkeypatch):
    # staff.csv spells roles many ways and has 5 duplicate rows; the refined table holds the
    # canonical roles (overrides) and 400 rows: the asset's figures must be the table's
    import duckdb

    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    ws = _built_workspace(tmp_path, example_interpretation, seed_overrides=True)
    result = _materialize(ws, example_interpretation, manifest_tables(ws))
    assert result.success
    meta = {m.asset_key.path[-1]: m.metadata for m in result.asset_materializations_for_node("warehouse")}["staff"]
    with duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True) as con:
        rows, roles, nulls, lo, hi = con.execute(
            "SELECT count(*), count(DISTINCT role), count(*) - count(role), min(hire_date)::VARCHAR, "
            "max(hire_date)::VARCHAR FROM staff").fetchone()
    source = next(c for s in example_interpretation.sources if s.name == "staff" for c in s.columns if c.name == "role")
    assert source.distinct_count > roles  # the source's raw spellings: the figure that must not show
    assert meta["dagster/row_count"].value == rows == 400
    stats = {r.data["column"]: r.data for r in meta["column_statistics"].value.records}
    assert stats["role"]["distinct"] == roles and stats["role"]["nulls"] == nulls
    assert (stats["hire_date"]["min"], stats["hire_date"]["max"]) == (lo, hi)
    schema = {c.name: c for c in meta["dagster/column_schema"].value.columns}
    assert f"in the table: {roles} distinct" in schema["role"].description
    assert f"{source.distinct_count} distinct" not in schema["role"].description
    # the UI's *Columns* panel reads the definition: the code location loaded after the build
    # carries the same figures (cached per warehouse file in schema/table_stats.json)
    from dia_assets.definitions import build_defs

    assert (ws / "schema" / "table_stats.json").exists()
    spec = build_defs(ws).resolve_asset_graph().get(AssetKey(["warehouse", "staff"]))
    columns = {c.name: c for c in spec.metadata["dagster/column_schema"].columns}
    assert f"in the table: {roles} distinct" in columns["role"].description
    assert spec.metadata["dagster/row_count"].value == rows
