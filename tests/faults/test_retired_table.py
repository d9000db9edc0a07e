"""Issue 26: removing or renaming a file runs validation and refreshes the catalog.

The code location has one asset per table of the last manifest; a build whose new manifest
drops a table (its file deleted or renamed) must still run the warehouse checks, the
validation report and the semantic catalog, and the catalog must lose the table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dagster import AssetKey, DagsterEventType, DagsterInstance

from dia_assets.pipeline import run as build
from tests.faults.state_harness import count, export, write_csv
from tests.memory_fixtures import db_url, pg_server  # noqa: F401

# the catalog is not in build_job: it follows each new validation report in its own run
# (dia_automation, eager; tests/test_automation_sensor.py), catalog_job here
STEPS = {"interpretation", "schema_manifest", "warehouse", "warehouse_checks", "validation_report"}


def build_job_run(ws: Path, job: str = "build_job", instance: DagsterInstance | None = None):  # noqa: ANN201
    """`job` of the code location as it loads now (one asset per table of the manifest),
    its resources from the environment (DIA_WORKSPACE, DIA_DATA_DIR, DIA_MEMORY_URL)."""
    from dia_assets.definitions import build_defs

    defs = build_defs(ws)
    instance = instance or DagsterInstance.ephemeral()
    result = defs.resolve_job_def(job).execute_in_process(instance=instance, raise_on_error=False)
    started = {e.step_key for e in result.all_events if e.event_type == DagsterEventType.STEP_START}
    skipped = {e.step_key for e in result.all_events if e.event_type == DagsterEventType.STEP_SKIPPED}
    return result, started, skipped, instance


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, db_url: str) -> tuple[Path, Path]:  # noqa: F811
    data, ws = tmp_path / "data", tmp_path / "ws"
    export(data)
    write_csv(data / "regions.csv", ["region_id", "name"], [[i, f"R{i}"] for i in range(1, 6)])
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    monkeypatch.setenv("DIA_DATA_DIR", str(data))
    monkeypatch.setenv("DIA_MEMORY_URL", db_url)
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    monkeypatch.delenv("DIA_MODEL", raising=False)
    assert build(data, ws).report.accepted
    return data, ws


def catalog_tables(ws: Path) -> set[str]:
    nodes = json.loads((ws / "catalog" / "semantic_catalog.json").read_text())["nodes"]
    return {n["table"] for n in nodes if n["level"] == "entity"}


@pytest.mark.parametrize("how", ["deleted", "renamed"])
def test_retiring_a_table_validates_and_refreshes_the_catalog(built, how: str):
    data, ws = built
    if how == "deleted":
        (data / "regions.csv").unlink()
    else:
        (data / "regions.csv").rename(data / "areas.csv")
    result, started, skipped, instance = build_job_run(ws)
    assert result.success and not skipped
    assert started == STEPS  # nothing skipped after the warehouse step
    report = json.loads((ws / "validation" / "report.json").read_text())
    tables = {r["table"] for r in report["row_counts"]}
    assert report["accepted"] and "regions" not in tables
    assert ("areas" in tables) == (how == "renamed")
    # the retired table's asset says so; its checks name it retired instead of passing silently
    retired = instance.get_latest_materialization_event(AssetKey(["warehouse", "regions"])).asset_materialization
    assert retired.metadata["retired"].value is True and retired.metadata["dagster/row_count"].value == 0
    checks = {e.check_name: e for e in result.get_asset_check_evaluations() if e.asset_key == AssetKey(["warehouse", "regions"])}
    assert checks and all(c.passed and "retired" in (c.description or "") for c in checks.values())
    # the catalog follows: the retired table is gone from it
    refreshed, started, _, _ = build_job_run(ws, "catalog_job", instance)
    assert refreshed.success and started == {"semantic_catalog"}
    entities = catalog_tables(ws)
    assert "regions" not in entities and {"customers", "orders"} <= entities
    assert ("areas" in entities) == (how == "renamed")
    assert count(ws / "warehouse.duckdb", "customers") == 10
