"""In Dagster: a build_job whose warehouse step crashes or whose process is killed leaves the
quality checks and the `answered` check failing with the reason, instead of passing on the
old warehouse; the next build that finishes validation clears it (issue 26)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest
from dagster import AssetKey, DagsterInstance, Definitions, materialize
from typer.testing import CliRunner

from dia_assets.agents.schema_creator import validate as validate_module
from dia_assets.agents.schema_creator.attempt import read_attempt
from dia_assets.cli.app import app
from dia_assets.contracts.report import ValidationReport
from dia_assets.dagster.interpretation import interpretation_asset, raw_file_assets
from dia_assets.dagster.query import query_result_asset, register_question_partitions
from dia_assets.dagster.resources import LLMResource, WorkspaceResource
from dia_assets.dagster.resources.warehouse import duckdb_resource
from dia_assets.dagster.schema import schema_assets, schema_checks
from dia_assets.dagster.sensors import build_job, quality_check_job
from tests.conftest import ROOT
from tests.faults.state_harness import count, export
from tests.query_fixtures import FAKE_MODEL, call, register_tools


def definitions(data: Path, ws: Path) -> Definitions:
    raws = raw_file_assets(str(data))
    return Definitions(
        assets=[*raws, interpretation_asset([r.key for r in raws]), *schema_assets], asset_checks=schema_checks,
        jobs=[build_job, quality_check_job],
        resources={"workspace": WorkspaceResource(root=str(ws), data_dir=str(data)),
                   "llm": LLMResource(model=None), "duckdb": duckdb_resource(str(ws))})


@pytest.fixture
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Definitions, DagsterInstance]:
    data, ws = tmp_path / "data", tmp_path / "ws"
    export(data)
    for name in ("DIA_WAREHOUSE", "DIA_EXECUTOR", "DIA_MODEL"):
        monkeypatch.delenv(name, raising=False)
    defs, instance = definitions(data, ws), DagsterInstance.ephemeral()
    assert _job(defs, instance, build_job.name).success
    return data, ws, defs, instance


def _job(defs: Definitions, instance: DagsterInstance, name: str):  # noqa: ANN202
    return defs.resolve_job_def(name).execute_in_process(instance=instance, raise_on_error=False)


def _checks(defs: Definitions, instance: DagsterInstance) -> dict[str, tuple[bool, str]]:
    run = _job(defs, instance, quality_check_job.name)
    return {e.check_name: (e.passed, e.description or "") for e in run.get_asset_check_evaluations()}


def test_a_crash_in_the_warehouse_step_fails_the_quality_checks(env, monkeypatch):
    data, ws, defs, instance = env
    assert all(passed for passed, _ in _checks(defs, instance).values())
    export(data, orders=30)

    def crash(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - the issue's foreign-key check crash
        raise duckdb.ConversionException("Conversion Error: Could not convert string 'T1' to INT32")

    monkeypatch.setattr(validate_module, "check_keys", crash)
    failed = _job(defs, instance, build_job.name)
    monkeypatch.undo()
    assert not failed.success
    attempt = read_attempt(ws)
    assert attempt.outcome == "failed" and attempt.step == "validate" and attempt.attempt_id == failed.run_id
    assert attempt.command.startswith(f"dagster run {failed.run_id[:8]} (build_job)")
    seen = instance.fetch_observations(AssetKey("validation_report"), limit=1).records[0].asset_observation
    assert seen.metadata["stale"].value is True and "ConversionException" in seen.metadata["stale_reason"].value
    checks = _checks(defs, instance)
    assert checks and not any(passed for passed, _ in checks.values())
    assert all(text.startswith("STALE: the build started") for _, text in checks.values())
    assert count(ws / "warehouse.duckdb", "orders") == 20  # the old warehouse, still in place
    shown = CliRunner().invoke(app, ["status", "--workspace", str(ws)])
    assert shown.exit_code == 1 and "failed in step validate: ConversionException" in shown.output.splitlines()[0]
    # the next build that finishes validation clears it
    assert _job(defs, instance, build_job.name).success
    assert all(passed for passed, _ in _checks(defs, instance).values())
    assert count(ws / "warehouse.duckdb", "orders") == 30


KILLED_RUN = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    from dagster import DagsterInstance
    from dia_assets.agents.schema_creator import load
    from tests.faults.test_stale_checks import definitions
    real = load._load_table
    def dying(con, table, *args, **kwargs):
        if table.name == "orders":
            os.kill(os.getpid(), signal.SIGKILL)
        return real(con, table, *args, **kwargs)
    load._load_table = dying
    defs = definitions(Path(sys.argv[1]), Path(sys.argv[2]))
    defs.resolve_job_def("build_job").execute_in_process(instance=DagsterInstance.ephemeral())
""")


def test_a_killed_build_run_fails_the_checks_until_the_next_build(env):
    data, ws, defs, instance = env
    export(data, orders=50)
    child = subprocess.run([sys.executable, "-c", KILLED_RUN, str(data), str(ws)], capture_output=True, text=True,
                           env=dict(os.environ, PYTHONPATH=str(ROOT), LITELLM_LOCAL_MODEL_COST_MAP="True"),
                           timeout=300, cwd=ROOT)
    assert child.returncode == -signal.SIGKILL, child.stderr[-2000:]
    attempt = read_attempt(ws)
    assert attempt.outcome == "running" and attempt.command.endswith("(build_job)")
    checks = _checks(defs, instance)
    assert checks and not any(passed for passed, _ in checks.values())
    assert all("was killed (or timed out) in step" in text for _, text in checks.values())
    shown = CliRunner().invoke(app, ["status", "--workspace", str(ws)])
    assert shown.exit_code == 1 and "killed (or timed out) in step" in shown.output.splitlines()[0]
    assert count(ws / "warehouse.duckdb", "orders") == 20
    rebuilt = _job(defs, instance, build_job.name)
    assert rebuilt.success
    report = ValidationReport.read(ws / "validation" / "report.json")
    assert report.accepted and "rolled back: removed its unfinished build" in report.last_attempt.recovered[0]
    assert count(ws / "warehouse.duckdb", "orders") == 50
    assert all(passed for passed, _ in _checks(defs, instance).values())


def test_an_answer_on_a_stale_warehouse_fails_the_answered_check(env, tmp_path, monkeypatch):
    data, ws, defs, instance = env
    questions = tmp_path / "questions.yaml"
    questions.write_text("- id: order_count\n  question: How many orders are there?\n")
    monkeypatch.setenv("DIA_QUESTIONS", str(questions))
    register_question_partitions(instance)
    asset = query_result_asset(with_memory=False)

    def ask():  # noqa: ANN202
        register_tools([call("declare_contract", kind="analytical", columns=["orders"],
                             granularity={"description": "all orders", "key_columns": []}),
                        call("submit", sql="SELECT count(*) AS orders FROM orders")])
        run = materialize([asset], instance=instance, partition_key="order_count", resources={
            "workspace": WorkspaceResource(root=str(ws), data_dir=str(data)), "llm": LLMResource(model=FAKE_MODEL)})
        [check] = run.get_asset_check_evaluations()
        meta = run.asset_materializations_for_node("query_result")[0].metadata
        return meta["status"].value, check

    status, check = ask()
    assert status == "answered" and check.passed
    export(data, codes=True)  # the case: the next build cannot replace the warehouse
    assert not _job(defs, instance, build_job.name).success
    status, check = ask()
    assert status == "answered" and not check.passed  # an answer, but from data that is not current
    assert check.description.startswith("STALE warehouse, the answer is from old data: ")
