"""A new file lands in the data folder: the sensor asks for a run, the run loads it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
from dagster import DagsterInstance, Definitions, build_sensor_context

from dia_assets.dagster.interpretation import interpretation_asset, raw_file_assets
from dia_assets.dagster.resources import LLMResource, WorkspaceResource
from dia_assets.dagster.resources.warehouse import duckdb_resource
from dia_assets.dagster.schema import schema_assets, schema_checks
from dia_assets.dagster.sensors import build_job, drift_sensor, new_data_sensor
from tests.conftest import EXAMPLES


def test_dropping_a_file_rebuilds_the_warehouse_with_its_rows(tmp_path: Path, monkeypatch):
    data, ws = tmp_path / "data", tmp_path / "ws"
    data.mkdir()
    shutil.copy(EXAMPLES / "data" / "hospital.xlsx", data)
    monkeypatch.setenv("DIA_DATA_DIR", str(data))
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    monkeypatch.setenv("DIA_SETTLE_S", "0")  # files are written whole here
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    instance = DagsterInstance.ephemeral()

    def run(cursor: str | None) -> str:
        result = new_data_sensor(build_sensor_context(instance=instance, cursor=cursor))
        assert len(result.run_requests) == 1
        raws = raw_file_assets(str(data))
        defs = Definitions(
            assets=[*raws, interpretation_asset([r.key for r in raws]), *schema_assets], asset_checks=schema_checks,
            jobs=[build_job],
            resources={"workspace": WorkspaceResource(root=str(ws), data_dir=str(data)), "llm": LLMResource(model=None),
                       "duckdb": duckdb_resource(str(ws))},
        )
        outcome = defs.resolve_job_def("build_job").execute_in_process(
            instance=instance, tags=result.run_requests[0].tags)
        assert outcome.success
        return result.cursor

    cursor = run(None)
    drift_cursor = drift_sensor(build_sensor_context(instance=instance)).cursor
    (data / "clinics.csv").write_text("clinic_code,name,department_code\nC1,North,CARD\nC2,South,ONCO\nC3,East,CARD\n")
    run(cursor)
    drift = drift_sensor(build_sensor_context(instance=instance, cursor=drift_cursor))
    assert "source_added clinics" in drift.asset_events[0].metadata["drift/summary"].value
    # build_job already rebuilt the schema: no second rebuild, only the checks on the new table
    assert [(r.job_name, r.tags["dia/tables"]) for r in drift.run_requests] == [("quality_check_job", "clinics")]
    con = duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True)
    assert con.execute("SELECT count(*) FROM main.clinics").fetchall()[0][0] == 3
    report = json.loads((ws / "validation" / "report.json").read_text())
    assert report["accepted"] and "clinics" in {r["table"] for r in report["row_counts"]}
