"""Issue 16 replay: the way source systems change, step by step, against a Dagster instance.

Each step changes the data folder, evaluates `new_data_sensor`, applies its partition
requests, runs the `build_job` it asks for, evaluates `drift_sensor`, and asserts the
detection, the runs requested and the validation report's state.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from dagster import (
    AddDynamicPartitionsRequest,
    AssetCheckEvaluation,
    AssetKey,
    DagsterInstance,
    Definitions,
    DeleteDynamicPartitionsRequest,
    SkipReason,
    build_sensor_context,
)
from typer.testing import CliRunner

from dia_assets.cli.app import app
from dia_assets.dagster.interpretation import interpretation_asset, raw_file_assets
from dia_assets.dagster.resources import LLMResource, WorkspaceResource
from dia_assets.dagster.resources.warehouse import duckdb_resource
from dia_assets.dagster.schema import schema_assets, schema_checks
from dia_assets.dagster.sensors import (
    build_job,
    drift_sensor,
    new_data_sensor,
    quality_check_job,
    schema_job,
)
from tests.replay_data import OLD_TEMPLATE, QUERIES
from tests.replay_data import customers as _customers
from tests.replay_data import orders as _orders
from tests.replay_data import products as _products


class Replay:
    def __init__(self, data: Path, ws: Path):
        self.data, self.ws = data, ws
        self.instance = DagsterInstance.ephemeral()
        self.data_cursor: str | None = None
        self.drift_cursor: str | None = None
        raws = raw_file_assets(str(data))
        self.defs = Definitions(
            assets=[*raws, interpretation_asset([r.key for r in raws]), *schema_assets], asset_checks=schema_checks,
            jobs=[build_job, schema_job, quality_check_job],
            resources={"workspace": WorkspaceResource(root=str(ws), data_dir=str(data)),
                       "llm": LLMResource(model=None), "duckdb": duckdb_resource(str(ws))},
        )

    def partitions(self) -> list[str]:
        return sorted(self.instance.get_dynamic_partitions("raw_files"))

    def step(self) -> dict:
        """new_data_sensor -> build_job -> drift_sensor; what each did."""
        out: dict = {"build": None, "drift": None, "runs": []}
        found = new_data_sensor(build_sensor_context(instance=self.instance, cursor=self.data_cursor))
        if isinstance(found, SkipReason):
            out["skip"] = found.skip_message
        else:
            for req in found.dynamic_partitions_requests:  # what the daemon does with them
                if isinstance(req, AddDynamicPartitionsRequest):
                    self.instance.add_dynamic_partitions(req.partitions_def_name, list(req.partition_keys))
                elif isinstance(req, DeleteDynamicPartitionsRequest):
                    for key in req.partition_keys:
                        self.instance.delete_dynamic_partition(req.partitions_def_name, key)
            for event in found.asset_events:  # the daemon stores the raw files' observations
                self.instance.report_runless_asset_event(event)
            self.data_cursor = found.cursor
            if not found.run_requests:  # the cursor moved (files observed, the last run's outcome read)
                out["skip"] = found.skip_reason.skip_message if found.skip_reason else "observed only"
            else:
                assert len(found.run_requests) == 1, "one build per change"
                req = found.run_requests[0]
                assert req.run_key and req.tags["dia/change"]
                run = self.defs.resolve_job_def(build_job.name).execute_in_process(
                    instance=self.instance, tags=req.tags, raise_on_error=False)
                out["build"] = run.success
        drift = drift_sensor(build_sensor_context(instance=self.instance, cursor=self.drift_cursor))
        if not isinstance(drift, SkipReason):
            self.drift_cursor = drift.cursor
            out["runs"] = sorted((r.job_name, r.partition_key or "") for r in drift.run_requests)
            assert all(r.run_key and r.tags.get("dia/trigger") for r in drift.run_requests)
            observations = [e for e in drift.asset_events if not isinstance(e, AssetCheckEvaluation)]
            out["checks"] = [(e.asset_key.to_user_string(), e.check_name, e.passed)
                             for e in drift.asset_events if isinstance(e, AssetCheckEvaluation)]
            if observations:
                out["drift"] = {(c["kind"], c["source"], c.get("column"))
                                for c in observations[0].metadata["drift/changes"].value}
                # a tick that detects drift always requests a run, so it is never SKIPPED
                assert drift.run_requests
            out["requests"] = drift.run_requests
        out["report"] = json.loads((self.ws / "validation" / "report.json").read_text())
        return out


def test_replay_of_real_source_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    data, ws = tmp_path / "data", tmp_path / "ws"
    data.mkdir()
    monkeypatch.setenv("DIA_DATA_DIR", str(data))
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    monkeypatch.setenv("DIA_SETTLE_S", "0")  # files are written whole here
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    replay = Replay(data, ws)

    # 1. initial drop: one build, accepted; the first interpretation is the drift baseline
    (data / "customers.csv").write_text(_customers())
    (data / "products.csv").write_text(_products())
    (data / "orders.csv").write_text(_orders())
    step = replay.step()
    assert step["build"] is True and step["report"]["accepted"] and step["runs"] == []
    assert replay.partitions() == ["customers_csv", "orders_csv", "products_csv"]
    manifest = json.loads((ws / "schema" / "manifest.json").read_text())
    keys = {t["name"]: t["primary_key"] for t in manifest["tables"]}
    assert keys["customers"] == ["customer_id"] and keys["orders"] == ["order_id"]
    for qid, sql in QUERIES.items():
        (ws / "queries" / qid).mkdir(parents=True)
        (ws / "queries" / qid / "query.sql").write_text(sql)
    replay.instance.add_dynamic_partitions("questions", sorted(QUERIES))
    (ws / "queries" / "retired").mkdir()  # a saved answer whose question is no longer registered
    (ws / "queries" / "retired" / "query.sql").write_text("SELECT city FROM customers")
    (ws / "review" / "interpretation_overrides.yaml").write_text(OLD_TEMPLATE)

    # 2. a column added: rebuilt by build_job (no second rebuild), checks re-run; no saved
    # answer reads the new column, so none is re-run
    (data / "customers.csv").write_text(_customers(phone=True))
    step = replay.step()
    assert step["build"] is True and step["report"]["accepted"]
    assert step["drift"] == {("column_added", "customers", "phone")}
    assert step["runs"] == [("quality_check_job", "")]

    # 3. a column renamed: the old template's live `note` key is stale, not an error
    (data / "orders.csv").write_text(_orders(note="comment"))
    step = replay.step()
    assert step["build"] is True and step["report"]["accepted"]
    assert step["drift"] == {("column_renamed", "orders", "comment")}
    assert [s["where"] for s in step["report"]["stale_overrides"]] == ["tables.orders.columns.note"]
    assert step["report"]["stale_overrides"][0]["line"] == 5
    assert step["runs"] == [("quality_check_job", ""), ("query_job", "notes")]  # it read orders.note

    # 4. a measure tripled in a 30-row table: the small-table test sees it
    (data / "products.csv").write_text(_products(scale=3.0))
    step = replay.step()
    assert step["build"] is True
    assert step["drift"] == {("distribution_shift", "products", "sale_price")}
    assert step["runs"] == [("quality_check_job", ""), ("query_job", "prices")]
    check_req = next(r for r in step["requests"] if r.job_name == quality_check_job.name)
    assert check_req.tags["dia/tables"] == "products"
    checked = replay.defs.resolve_job_def(quality_check_job.name).execute_in_process(
        instance=replay.instance, tags=check_req.tags, raise_on_error=False)
    assert {e.check_name for e in checked.get_asset_check_evaluations()} >= {"key_validity", "row_count_reconciliation"}

    # 5. half a column blanked: a null-rate jump
    (data / "customers.csv").write_text(_customers(phone=True, blank_city=True))
    step = replay.step()
    assert step["build"] is True and step["report"]["accepted"]
    assert ("null_rate_jump", "customers", "city") in step["drift"]
    assert ("query_job", "cities") in step["runs"] and ("quality_check_job", "") in step["runs"]
    assert ("query_job", "retired") not in step["runs"]  # unknown partition: would fail the tick

    # 6. a key broken: the key stays, key_validity fails with the offending rows, the build is
    # not installed, the report is failed/stale, a failed check and a review item appear
    (data / "customers.csv").write_text(_customers(phone=True, blank_city=True, broken=True))
    step = replay.step()
    assert step["build"] is False
    assert ("primary_key_broken", "customers", None) in step["drift"]
    manifest = json.loads((ws / "schema" / "manifest.json").read_text())
    customers = next(t for t in manifest["tables"] if t["name"] == "customers")
    assert customers["primary_key"] == ["customer_id"] and customers["primary_key_origin"] == "previous"
    assert any(fk["ref_table"] == "customers" for t in manifest["tables"] for fk in t["foreign_keys"])
    report = step["report"]
    assert report["accepted"] is False and report["installed"] is False and report["stale_reason"]
    broken = [k for k in report["key_validity"] if k["table"] == "customers" and k["kind"] == "primary_key"][0]
    assert not broken["passed"] and broken["duplicate_keys"] == 3 and broken["examples"]
    # key_validity fails on each table whose keys broke (the manifest has them as table assets)
    assert ("warehouse/customers", "key_validity", False) in step["checks"]
    assert {c[1:] for c in step["checks"]} == {("key_validity", False)}
    # the quality check the drift asked for fails too, with the rejected build's offending rows,
    # instead of passing on the old warehouse
    check_req = next(r for r in step["requests"] if r.job_name == quality_check_job.name)
    checked = replay.defs.resolve_job_def(quality_check_job.name).execute_in_process(
        instance=replay.instance, tags=check_req.tags, raise_on_error=False)
    key_check = next(e for e in checked.get_asset_check_evaluations() if e.check_name == "key_validity")
    assert not key_check.passed and key_check.description.startswith("STALE")
    assert broken["examples"][0] in key_check.metadata["details"].value
    assert "primary_key_broken customers" in (ws / "review" / "drift_review.md").read_text()
    assert ("quality_check_job", "") in step["runs"] and ("query_job", "cities") in step["runs"]
    assert not any(job == schema_job.name for job, _ in step["runs"])  # no schema change: no rebuild to repeat
    assert "STALE" in (ws / "validation" / "report.md").read_text()
    # the validation_report asset shows it too (its step does not run after a failed warehouse)
    seen = replay.instance.fetch_observations(AssetKey("validation_report"), limit=1).records[0]
    meta = seen.asset_observation.metadata
    assert meta["accepted"].value is False and meta["stale"].value is True

    # 7. exact duplicates added to a keyed table: recorded as drift (the key break still stands)
    (data / "orders.csv").write_text(_orders(note="comment", dups=12))
    step = replay.step()
    assert ("duplicate_rows_grew", "orders", None) in step["drift"]
    assert step["build"] is False and step["report"]["accepted"] is False

    # 8. a file deleted: its raw partition is retired; schema drift after a failed build asks
    # for a rebuild with the change applied
    (data / "products.csv").unlink()
    step = replay.step()
    assert replay.partitions() == ["customers_csv", "orders_csv"]
    assert ("source_removed", "products", None) in step["drift"]
    assert ("schema_job", "") in step["runs"] and ("query_job", "prices") in step["runs"]
    assert step["report"]["accepted"] is False

    # 9. a file touched, not changed: nothing runs, nothing drifts, the report stays failed
    path = data / "orders.csv"
    os.utime(path, (time.time() + 60, time.time() + 60))
    step = replay.step()
    assert step["skip"] == "no change in the data folder" and step["build"] is None
    assert step["runs"] == [] and step["drift"] is None
    assert step["report"]["accepted"] is False and step["report"]["stale_reason"]
    # and `dia status` says so
    shown = CliRunner().invoke(app, ["status", "--workspace", str(ws)])
    assert shown.exit_code == 1 and "accepted: false" in shown.output and "STALE:" in shown.output


# Answers whose SQL names a table it does not read, or reads a column it does not name: the
# reads the query agent records (sqlglot scopes over the warehouse schema) tell them apart, the
# name match replanning used before slice 5 of issue 32 did not.
READS_QUERIES = {
    "star": "SELECT * FROM customers WHERE customer_id < 3",  # reads city without naming it
    "alias_cte": "WITH customers AS (SELECT customer_id AS city FROM orders) "  # a CTE named like a table,
                 "SELECT city, count(*) FROM customers GROUP BY city",  # its column aliased like the drifting one
    "joined": "SELECT c.city, sum(o.quantity) FROM orders o JOIN customers c ON c.customer_id = o.customer_id "
              "GROUP BY 1",
    "volume": "SELECT sum(quantity) FROM orders",
}


def test_replanning_follows_the_reads_each_answer_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A drift re-answers the questions whose stored `QueryResult.reads` include the drifting
    column: `SELECT *` over the table does, a CTE named like the table does not."""
    from dia_assets.agents.lineage.index import schema_of, workspace_manifest
    from dia_assets.contracts.query_result import QueryResult
    from dia_assets.platform.sql.reads import sql_reads

    data, ws = tmp_path / "data", tmp_path / "ws"
    data.mkdir()
    monkeypatch.setenv("DIA_DATA_DIR", str(data))
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    monkeypatch.setenv("DIA_SETTLE_S", "0")
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    replay = Replay(data, ws)
    (data / "customers.csv").write_text(_customers())
    (data / "orders.csv").write_text(_orders())
    step = replay.step()
    assert step["build"] is True and step["report"]["accepted"]
    schema = schema_of(workspace_manifest(ws))  # the warehouse's columns, as the query agent qualifies with
    for qid, sql in READS_QUERIES.items():
        folder = ws / "queries" / qid
        folder.mkdir(parents=True)
        (folder / "query.sql").write_text(sql)
        QueryResult(question_id=qid, question=qid, status="answered", sql=sql,
                    reads=sql_reads(sql, schema)).write(folder / "result.json")
    assert QueryResult.read(ws / "queries" / "star" / "result.json").reads["customers"] == [
        "city", "customer_id", "first_name", "last_name"]
    replay.instance.add_dynamic_partitions("questions", sorted(READS_QUERIES))

    (data / "customers.csv").write_text(_customers(blank_city=True))
    step = replay.step()
    assert step["build"] is True
    assert ("null_rate_jump", "customers", "city") in step["drift"]
    assert {source for _, source, _ in step["drift"]} == {"customers"}
    assert step["runs"] == [("quality_check_job", ""), ("query_job", "joined"), ("query_job", "star")]
