"""The Dagster glue: schema_manifest -> warehouse (+ five checks) -> validation_report."""

from __future__ import annotations

import shutil

from dagster import AssetKey, TableColumnLineage, TableSchema, asset, materialize
from dagster_duckdb import DuckDBResource

from dia_assets.agents.schema_creator.build import overrides_path
from dia_assets.contracts.report import ValidationReport
from dia_assets.dagster.resources.workspace import WorkspaceResource
from dia_assets.dagster.schema import schema_assets, schema_checks
from tests.schema_fixtures import EXAMPLES


def _run(ws, interp, monkeypatch):
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)

    @asset(name="interpretation")
    def interpretation(workspace: WorkspaceResource) -> None:
        workspace.path("interpretation.json").write_text(interp.to_json())

    return materialize(
        [interpretation, *schema_assets, *schema_checks],
        resources={
            "workspace": WorkspaceResource(root=str(ws), data_dir=str(EXAMPLES / "data")),
            "duckdb": DuckDBResource(database=str(ws / "warehouse.duckdb")),
        },
        raise_on_error=False,
    )


def test_materialize_example_accepted(tmp_path, example_interpretation, monkeypatch):
    ws = tmp_path / "ws"
    path = overrides_path(ws)
    path.parent.mkdir(parents=True)
    shutil.copyfile(EXAMPLES / "data" / "overrides.yaml", path)
    result = _run(ws, example_interpretation, monkeypatch)
    assert result.success
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"row_count_reconciliation": True, "column_coverage": True, "key_validity": True,
                      "load_integrity": True, "test_queries": True}
    meta = result.asset_materializations_for_node("warehouse")[0].metadata
    assert isinstance(meta["dagster/column_schema"].value, TableSchema)
    lineage = meta["dagster/column_lineage"].value
    assert isinstance(lineage, TableColumnLineage)
    dep = lineage.deps_by_column["payroll.gross_pay"][0]
    assert dep.asset_key == AssetKey("raw_files") and dep.column_name == "gross_pay"
    assert "raw_files partition payroll_parquet" in next(
        c.description for c in meta["schema/payroll"].value.columns if c.name == "gross_pay")
    assert meta["rows/staff"].value == 400
    manifest_meta = result.asset_materializations_for_node("schema_manifest")[0].metadata
    # a Markdown table (the open-source UI shows Mermaid as source text; er.mmd keeps the diagram)
    er = manifest_meta["er_diagram"].value
    assert "| payroll | " in er and "(badge) -> staff(badge) orphans allowed" in er and "erDiagram" not in er
    assert "| payroll | " in manifest_meta["decisions_table"].value and "| override |" in manifest_meta["decisions_table"].value
    report = ValidationReport.read(ws / "validation" / "report.json")
    assert report.accepted


def test_blocking_check_failure_stops_the_report(tmp_path, example_interpretation, monkeypatch):
    # No overrides seed: the template applies nothing, so the example's known orphans are not
    # allowed and key_validity fails; it is blocking, so validation_report does not run.
    result = _run(tmp_path / "ws", example_interpretation, monkeypatch)
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert not checks["key_validity"].passed
    assert "payroll" in checks["key_validity"].description
    assert checks["row_count_reconciliation"].passed
    assert not result.asset_materializations_for_node("validation_report")
    # ...but the warehouse step left a report that says why.
    report = ValidationReport.read(tmp_path / "ws" / "validation" / "report.json")
    assert not report.accepted and not report.axes["key_validity"].passed
    assert overrides_path(tmp_path / "ws").read_text().startswith("# Expert overrides")
