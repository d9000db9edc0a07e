"""Production settings, run for real: the documented `deploy/dagster.yaml` (PostgreSQL instance
storage through dagster-postgres) against the embedded PostgreSQL, materializing the build graph
with the warehouse in PostgreSQL too; the runs, events and lineage land where they should."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import psycopg
import pytest
from dagster import AssetKey, DagsterInstance, materialize

from tests.memory_fixtures import fresh_database_url, pg_server  # noqa: F401  (fixture)

pytestmark = pytest.mark.heavy  # collected first (tests/conftest.py)
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def pg_instance(tmp_path: Path, pg_server, monkeypatch: pytest.MonkeyPatch):  # noqa: ANN001, ANN201, F811
    url = fresh_database_url(pg_server, f"dagster_{os.getpid()}")
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copyfile(ROOT / "deploy" / "dagster.yaml", home / "dagster.yaml")
    monkeypatch.setenv("DIA_DAGSTER_PG_URL", url.replace("postgresql://", "postgresql+psycopg2://", 1))
    instance = DagsterInstance.from_config(str(home))
    yield instance, url
    instance.dispose()


def test_postgres_instance_records_a_materialization_of_the_graph_on_a_postgres_warehouse(
        tmp_path: Path, pg_instance, pg_server, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001, F811
    from dia_assets.dagster.interpretation import interpretation_asset
    from dia_assets.dagster.lineage import lineage_report
    from dia_assets.dagster.resources import LLMResource, WorkspaceResource
    from dia_assets.dagster.resources.warehouse import duckdb_resource
    from dia_assets.dagster.schema import schema_assets, schema_checks

    instance, instance_url = pg_instance
    warehouse_url = fresh_database_url(pg_server, f"warehouse_{os.getpid()}")
    ws = tmp_path / "ws"
    (ws / "review").mkdir(parents=True)
    shutil.copyfile(ROOT / "examples" / "data" / "overrides.yaml", ws / "review" / "interpretation_overrides.yaml")
    monkeypatch.setenv("DIA_WAREHOUSE", warehouse_url)
    monkeypatch.delenv("DIA_MODEL", raising=False)
    result = materialize(
        [interpretation_asset([]), *schema_assets, *schema_checks, lineage_report],
        instance=instance,
        resources={"workspace": WorkspaceResource(root=str(ws), data_dir=str(ROOT / "examples" / "data")),
                   "llm": LLMResource(), "duckdb": duckdb_resource(str(ws))},
    )
    assert result.success
    assert instance.get_run_by_id(result.run_id) is not None
    for key in ("interpretation", "schema_manifest", "warehouse", "validation_report", "lineage_report"):
        event = instance.get_latest_materialization_event(AssetKey(key))
        assert event is not None and event.run_id == result.run_id, key
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks and all(checks.values()), checks
    # the events are rows in the PostgreSQL instance database, not in a local SQLite file
    with psycopg.connect(instance_url) as con:
        assert con.execute("SELECT count(*) FROM event_logs WHERE asset_key LIKE '%warehouse%' "
                           "AND dagster_event_type = 'ASSET_MATERIALIZATION'").fetchone()[0] >= 1
    assert not list((tmp_path / "dagster_home").glob("**/*.db"))
    # the warehouse is PostgreSQL, and the lineage reads its staging row ranges there
    with psycopg.connect(warehouse_url) as con:
        assert con.execute("SELECT count(*) FROM public.staff").fetchone()[0] == 400
    meta = result.asset_materializations_for_node("lineage_report")[0].metadata
    assert "| staff | staff.csv |" in meta["tables_and_files"].value
    assert "rows 1-405 (405 records)" in meta["tables_and_files"].value
    from dia_assets.agents.lineage.index import value_origin, workspace_manifest

    found = value_origin(workspace_manifest(ws), warehouse_url, "staff", "role", "Registered Nurse")
    assert found.rows == 159 and "RN" in found.raw_texts  # the same records as on DuckDB (test_lineage)
    from dia_assets.agents.lineage.index import LineageError

    with pytest.raises(LineageError, match="not a DATE value"):
        value_origin(workspace_manifest(ws), warehouse_url, "staff", "hire_date", "not a date")


# Step processes come from a forkserver that imported Dagster, dagster-postgres and the code
# location's modules once: each step is still its own process that rebuilds the job from the
# workspace's manifest (the point of this test), without paying those imports six times (the
# default `spawn` did, about 10 s a step on a busy 2-core machine).
FORKSERVER = {"forkserver": {"preload_modules": [
    "dagster", "dagster_postgres", "dia_assets.definitions", __name__]}}


def _build_job():  # noqa: ANN202 - reconstructable target: the code location's own build_job
    from dia_assets.definitions import build_defs

    return build_defs().resolve_job_def("build_job")


def test_build_job_runs_its_steps_in_separate_processes_on_the_postgres_instance(
        tmp_path: Path, pg_instance, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    """The multiprocess executor (DIA_EXECUTOR=multiprocess; `max_concurrent` bounds it) with PostgreSQL
    instance storage: each step is its own process. Every step process loads the code location
    again, so the tables must be planned before the run (as `make demo` does with plan_job): a
    run whose plan adds tables would hand its steps a different asset graph."""
    from dagster import DagsterEventType, execute_job, reconstructable

    from dia_assets.agents.interpreter import interpret
    from dia_assets.agents.schema_creator.build import write_plan

    instance, _ = pg_instance
    ws = tmp_path / "ws"
    (ws / "review").mkdir(parents=True)
    shutil.copyfile(ROOT / "examples" / "data" / "overrides.yaml", ws / "review" / "interpretation_overrides.yaml")
    for name, value in {"DIA_WORKSPACE": str(ws), "DIA_DATA_DIR": str(ROOT / "examples" / "data"),
                        "PYTHONPATH": str(ROOT), "DIA_EXECUTOR": "multiprocess"}.items():
        monkeypatch.setenv(name, value)
    for name in ("DIA_WAREHOUSE", "DIA_MODEL"):
        monkeypatch.delenv(name, raising=False)
    interp = interpret(ROOT / "examples" / "data")
    (ws / "interpretation.json").write_text(interp.to_json(), encoding="utf-8")
    manifest, _ = write_plan(interp, ws)
    with execute_job(reconstructable(_build_job), instance=instance,
                     run_config={"execution": {"config": {"max_concurrent": 2, "start_method": FORKSERVER}}}) as result:
        assert result.success
        starts = [e for e in result.all_events if e.event_type == DagsterEventType.STEP_START]
    steps = {e.step_key: e.pid for e in starts}
    # the catalog is not in build_job: it follows in a run of its own (its eager automation condition)
    assert set(steps) == {"interpretation", "schema_manifest", "warehouse", "warehouse_checks", "validation_report"}
    assert len(set(steps.values())) == len(steps)  # one process per step, the checks included
    for table in manifest.tables:
        assert instance.get_latest_materialization_event(AssetKey(["warehouse", table.name])) is not None
    assert instance.get_latest_materialization_event(AssetKey("validation_report")) is not None
