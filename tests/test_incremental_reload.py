"""Incremental reloads on a real build of the example data: a changed file re-profiles and
reloads only its own tables (the others keep markers planted in them), a deleted file's tables
are retired and recorded, a reload that is not accepted changes nothing, and a warehouse the
report does not describe falls back to a full build."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.interpreter import interpret
from dia_assets.agents.schema_creator.build import summary, validate_warehouse
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.pipeline import run
from dia_assets.platform.warehouse.fingerprint import file_identity

ROOT = Path(__file__).resolve().parents[1]
MARK = "TIMESTAMP '2000-01-01 00:00:00'"


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    shutil.copytree(ROOT / "examples" / "data", tmp_path / "data")
    ws = tmp_path / "ws"
    result = run(tmp_path / "data", ws, overrides_seed=ROOT / "examples" / "data" / "overrides.yaml", incremental=True)
    assert result.report.accepted and result.report.reload.mode == "full"
    return tmp_path / "data", ws


def _mark(data: Path, ws: Path, tables: list[str]) -> None:
    """Plant markers a reload would lose (staging provenance and a table comment), then let
    the report describe the marked file again, as after any accepted build."""
    from dia_assets.contracts.manifest import Manifest

    con = duckdb.connect(str(ws / "warehouse.duckdb"))
    for t in tables:
        con.execute(f"UPDATE staging.{t} SET _loaded_at = {MARK}")
        con.execute(f"COMMENT ON TABLE {t} IS 'marker'")
    con.close()
    manifest = Manifest.read(ws / "schema" / "manifest.json")
    assert validate_warehouse(manifest, str(ws / "warehouse.duckdb"), ws).accepted


def _marked(ws: Path, table: str) -> bool:
    con = duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True)
    try:
        loaded = con.execute(f"SELECT DISTINCT CAST(_loaded_at AS VARCHAR) FROM staging.{table}").fetchall()
        comment = con.execute("SELECT comment FROM duckdb_tables() WHERE schema_name = 'main' AND table_name = ?",
                              [table]).fetchone()[0]
    finally:
        con.close()
    return loaded == [("2000-01-01 00:00:00",)] and comment == "marker"


def _bump_first_payroll_row(data: Path) -> None:
    path = data / "payroll.parquet"
    tmp = data.parent / "p.parquet"
    duckdb.execute(f"COPY (SELECT * REPLACE (CASE WHEN badge = (SELECT min(badge) FROM '{path}') AND "
                   f"period = (SELECT min(period) FROM '{path}' WHERE badge = (SELECT min(badge) FROM '{path}')) "
                   f"THEN base_hours + 1000 ELSE base_hours END AS base_hours) FROM '{path}') TO '{tmp}'")
    shutil.move(tmp, path)


ALL = ["staff", "hospital_departments", "hospital_wards", "payroll", "shifts", "shifts_assignments"]


def test_a_changed_file_reloads_only_its_tables(built: tuple[Path, Path]) -> None:
    data, ws = built
    _mark(data, ws, ALL)
    _bump_first_payroll_row(data)
    result = run(data, ws, incremental=True)
    report = result.report
    assert report.accepted and report.installed
    assert report.reload.mode == "incremental"
    assert report.reload.reloaded == ["payroll"]
    assert report.reload.reasons["payroll"] == "payroll.parquet changed (content hash)"
    assert sorted(report.reload.kept) == sorted(set(ALL) - {"payroll"})
    for table in set(ALL) - {"payroll"}:
        assert _marked(ws, table), table  # untouched: staging rows and refined table as they were
    assert not _marked(ws, "payroll")
    con = duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True)
    assert con.execute("SELECT max(base_hours) FROM payroll").fetchone()[0] >= 1000  # the new data is in
    con.close()
    # the report still covers every table, and says what happened
    assert sorted(r.table for r in report.row_counts) == sorted(ALL)
    assert "incremental: reloaded payroll; kept 5 table(s) untouched" in summary(report)
    # lineage.json reuses the unchanged tables' entries: the same as deriving all of it afresh
    from dia_assets.agents.schema_creator.lineage import manifest_lineage

    assert json.loads((ws / "schema" / "lineage.json").read_text()) == manifest_lineage(result.manifest)


def test_interpretation_reuses_unchanged_profiles(built: tuple[Path, Path]) -> None:
    data, ws = built
    previous = Interpretation.read(ws / "interpretation.json")
    _bump_first_payroll_row(data)
    said: list[str] = []
    again = interpret(data, progress=said.append, previous=previous)
    kept = [m for m in said if "unchanged since the last interpretation" in m]
    assert len(kept) == 3 and not any("payroll" in m for m in kept)
    # a file of one source keeps its keys too and is not read; the workbook is read again
    assert any("staff.csv (profile and keys kept, not read)" in m for m in kept), kept
    assert any("hospital.xlsx (profile kept)" in m for m in kept), kept
    assert any("profiling payroll" in m for m in said)
    full = interpret(data, progress=lambda _m: None)
    assert again.model_dump(exclude={"generated_at"}) == full.model_dump(exclude={"generated_at"})


def test_a_deleted_file_is_retired_and_recorded(built: tuple[Path, Path]) -> None:
    data, ws = built
    _mark(data, ws, ["staff", "payroll"])
    (data / "shifts.jsonl").unlink()
    report = run(data, ws, incremental=True).report
    assert report.accepted
    retired = {r.table: r.reason for r in report.reload.retired}
    assert retired == {"shifts": "shifts.jsonl was deleted", "shifts_assignments": "shifts.jsonl was deleted"}
    assert report.reload.reloaded == []
    con = duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True)
    left = {(s, t) for s, t in con.execute("SELECT schema_name, table_name FROM duckdb_tables()").fetchall()}
    con.close()
    assert not {t for _, t in left} & {"shifts", "shifts_assignments"}
    assert _marked(ws, "staff") and _marked(ws, "payroll")
    assert "RETIRED shifts: shifts.jsonl was deleted" in summary(report)
    assert '"retired"' in (ws / "validation" / "report.json").read_text()


def test_a_parent_change_rebuilds_the_tables_that_reference_it(built: tuple[Path, Path]) -> None:
    data, ws = built
    _mark(data, ws, ALL)
    import openpyxl

    book = openpyxl.load_workbook(data / "hospital.xlsx")
    sheet = book["wards"]
    sheet.cell(row=2, column=sheet.max_column).value = sheet.cell(row=2, column=sheet.max_column).value
    book.properties.title = "touched"  # new bytes, same data
    book.save(data / "hospital.xlsx")
    report = run(data, ws, incremental=True).report
    assert report.accepted
    reloaded = set(report.reload.reloaded)
    # shifts references both sheets with enforced keys: DuckDB cannot drop a referenced table,
    # so it is rebuilt too; payroll references nothing that changed and stays
    assert {"hospital_departments", "hospital_wards", "shifts"} <= reloaded
    assert report.reload.reasons["shifts"].startswith("references hospital_"), report.reload.reasons
    assert _marked(ws, "payroll") and not _marked(ws, "shifts"), report.reload.reasons
    # staff's undeclared key to hospital_departments is checked again, the table is not reloaded
    assert "staff" in report.reload.revalidated and _marked(ws, "staff")


def test_a_reload_that_is_not_accepted_changes_nothing(built: tuple[Path, Path]) -> None:
    data, ws = built
    _mark(data, ws, ["payroll"])
    before = file_identity(ws / "warehouse.duckdb")
    path = data / "payroll.parquet"
    tmp = data.parent / "p.parquet"
    # a duplicated (badge, period) with other values: the carried-over primary key fails
    duckdb.execute(f"COPY (SELECT * FROM '{path}' UNION ALL (SELECT * REPLACE (base_hours + 1 AS base_hours) "
                   f"FROM '{path}' LIMIT 1)) TO '{tmp}'")
    shutil.move(tmp, path)
    result = run(data, ws, incremental=True)
    assert not result.report.accepted and not result.report.installed
    assert result.report.reload.mode == "incremental"
    assert file_identity(ws / "warehouse.duckdb") == before and _marked(ws, "payroll")
    assert (ws / "warehouse-rejected.duckdb").exists()


def test_falls_back_to_a_full_build_when_the_report_does_not_describe_the_warehouse(
        built: tuple[Path, Path]) -> None:
    data, ws = built
    con = duckdb.connect(str(ws / "warehouse.duckdb"))
    con.execute(f"UPDATE staging.staff SET _loaded_at = {MARK}")  # changed behind the report's back
    con.close()
    report = run(data, ws, incremental=True).report
    assert report.accepted and report.reload.mode == "full"
    assert report.reload.fallback == "the validation report does not describe an accepted warehouse in place"
    assert not _marked(ws, "staff")


def test_dia_build_is_incremental_by_default(built: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from dia_assets.cli.app import app

    data, ws = built
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    out = CliRunner().invoke(app, ["build", str(data)])
    assert out.exit_code == 0, out.output
    assert "incremental: reloaded nothing; kept 6 table(s) untouched" in out.output
    out = CliRunner().invoke(app, ["build", str(data), "--full"])
    assert out.exit_code == 0 and "incremental:" not in out.output and "reloaded" not in out.output
