"""Issue 16's nine steps of source change (tests/test_adaptation_replay.py calls the sensors by
hand) against a real Dagster daemon: the sensors tick on their own, the daemon launches what
they ask for (builds, schema rebuilds, quality checks, re-answers of saved questions) through
the run queue, and after each step the installed state and the runs the daemon made are
asserted. Files are written whole (by rename), so settle time is off here; the faults test
beside this one covers it. No time is asserted."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml
from dagster import AssetCheckKey, AssetKey, DagsterEventType, DagsterRun, DagsterRunStatus
from typer.testing import CliRunner

from dia_assets.cli.app import app
from tests.faults.live_daemon import LiveDaemon, loop_floor_patchable, scratch
from tests.memory_fixtures import db_url, pg_server  # noqa: F401
from tests.replay_data import OLD_TEMPLATE, QUERIES, customers, orders, products

pytestmark = [pytest.mark.live, pytest.mark.heavy]  # heavy: handed to a worker first


def put(path: Path, text: str) -> None:
    """Write a file whole: a reader sees the old content or the new, never half."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


@dataclass
class Step:
    """What the daemon did about one change."""

    builds: list[DagsterRun]
    drift: set[tuple] | None  # (kind, source, column) of the drift the sensor recorded, None: none
    runs: list[tuple[str, str]]  # (job, partition) of the runs the drift sensor launched
    drift_runs: list[DagsterRun] = field(default_factory=list)
    report: dict = field(default_factory=dict)

    @property
    def build(self) -> bool | None:
        """None: no build; else whether the one build succeeded."""
        if not self.builds:
            return None
        assert len(self.builds) == 1, f"one build per change, got {[r.status.value for r in self.builds]}"
        return self.builds[0].status == DagsterRunStatus.SUCCESS

    def run_of(self, job: str) -> DagsterRun:
        return next(r for r in self.drift_runs if r.job_name == job)


class LiveReplay:
    def __init__(self, daemon: LiveDaemon):
        self.live = daemon
        self.ws, self.data = daemon.ws, daemon.data

    def step(self, change: Callable[[], None]) -> Step:
        """Apply `change`, wait until the daemon has reacted to it (live_daemon.settle), and
        collect what it did."""
        live = self.live
        seen = {r.run_id for r in live.runs()}
        drifts = set((self.ws / "drift").glob("*.json"))
        change()
        live.mark()  # a data sensor tick before the change does not count
        live.settle()
        new = [r for r in live.runs() if r.run_id not in seen]
        by_drift = [r for r in new if r.tags.get("dagster/sensor_name") == "drift_sensor"]
        written = sorted(set((self.ws / "drift").glob("*.json")) - drifts)
        drift = None
        if written:
            assert len(written) == 1, written
            drift = {(c["kind"], c["source"], c.get("column")) for c in json.loads(written[0].read_text())["changes"]}
            assert by_drift, "a drift always gets a reaction"
        return Step(builds=[r for r in new if r.job_name == "build_job"], drift=drift,
                    runs=sorted((r.job_name, r.tags.get("dagster/partition", "")) for r in by_drift),
                    drift_runs=by_drift, report=json.loads((self.ws / "validation" / "report.json").read_text()))

    def partitions(self) -> list[str]:
        return sorted(self.live.instance.get_dynamic_partitions("raw_files"))

    def sensor_checks(self, tables: list[str], since: float) -> set[tuple[str, str, bool]]:
        """key_validity evaluations the drift sensor reported (no run) since `since`, on the
        tables' assets and on the single `warehouse` asset of a location from before the first build."""
        out = set()
        for asset in [AssetKey(["warehouse", table]) for table in tables] + [AssetKey("warehouse")]:
            key = AssetCheckKey(asset, "key_validity")
            for rec in self.live.instance.event_log_storage.get_asset_check_execution_history(key, limit=5):
                if rec.event is not None and not rec.event.run_id and rec.event.timestamp >= since:
                    evaluation = rec.event.dagster_event.event_specific_data
                    out.add((key.asset_key.to_user_string(), key.name, evaluation.passed))
        return out

    def planned_check_assets(self, run: DagsterRun) -> set[str]:
        """The assets whose checks `run` was planned with: the daemon plans a run from the code
        location it holds (one `warehouse` asset if loaded before the first build)."""
        events = self.live.instance.all_logs(run.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION_PLANNED)
        return {e.dagster_event.event_specific_data.asset_key.to_user_string() for e in events}

    def run_checks(self, run: DagsterRun) -> dict[tuple[str, str], object]:
        """(asset, check name) -> its evaluation, in a run."""
        events = self.live.instance.all_logs(run.run_id, of_type=DagsterEventType.ASSET_CHECK_EVALUATION)
        out = {}
        for e in events:
            evaluation = e.dagster_event.event_specific_data
            out[(evaluation.asset_key.to_user_string(), evaluation.check_name)] = evaluation
        return out


@pytest.fixture
def replay(tmp_path: Path, db_url: str):  # noqa: F811
    assert loop_floor_patchable(), "Dagster's sensor loop floor or dequeue interval moved: update live_daemon.py"
    with scratch(tmp_path) as base:  # in memory where the machine has it
        data, ws = base / "data", base / "ws"
        data.mkdir()
        # 1. initial drop, with the saved answers that read it and an expert's overrides file in the
        # old template (table and column names as live keys), all there when the daemon first looks
        put(data / "customers.csv", customers())
        put(data / "products.csv", products())
        put(data / "orders.csv", orders())
        for qid, sql in QUERIES.items():
            (ws / "queries" / qid).mkdir(parents=True)
            (ws / "queries" / qid / "query.sql").write_text(sql)
        (ws / "queries" / "retired").mkdir()  # a saved answer whose question is no longer asked
        (ws / "queries" / "retired" / "query.sql").write_text("SELECT city FROM customers")
        (ws / "review").mkdir()
        (ws / "review" / "interpretation_overrides.yaml").write_text(OLD_TEMPLATE)
        questions = base / "questions.yaml"
        questions.write_text(yaml.safe_dump([{"id": q, "question": f"the {q} question"} for q in QUERIES]))
        daemon = LiveDaemon(base, data, ws, {"DIA_SETTLE_S": "0", "DIA_BUILD_TRIES": "2",
                                                 "DIA_MEMORY_URL": db_url, "DIA_QUESTIONS": str(questions)})
        daemon.start()
        try:
            yield LiveReplay(daemon)
        finally:
            daemon.stop()
            print(daemon.report_timeline())


def test_the_nine_steps_of_source_change_against_a_live_daemon(replay: LiveReplay):
    ws, data, live = replay.ws, replay.data, replay.live

    # 1. initial drop: one build, accepted; the first interpretation is the drift baseline
    step = replay.step(lambda: None)
    assert step.build is True and step.report["accepted"] and step.runs == []
    assert replay.partitions() == ["customers_csv", "orders_csv", "products_csv"]
    manifest = json.loads((ws / "schema" / "manifest.json").read_text())
    keys = {t["name"]: t["primary_key"] for t in manifest["tables"]}
    assert keys["customers"] == ["customer_id"] and keys["orders"] == ["order_id"]
    assert sorted(live.instance.get_dynamic_partitions("questions")) == sorted(QUERIES)

    # 2. a column added: rebuilt by build_job (no second rebuild), checks re-run; no saved
    # answer reads the new column, so none is re-run
    step = replay.step(lambda: put(data / "customers.csv", customers(phone=True)))
    assert step.build is True and step.report["accepted"]
    assert step.drift == {("column_added", "customers", "phone")}
    assert step.runs == [("quality_check_job", "")]
    assert step.run_of("quality_check_job").status == DagsterRunStatus.SUCCESS

    # 3. a column renamed: the old template's live `note` key is stale, not an error
    step = replay.step(lambda: put(data / "orders.csv", orders(note="comment")))
    assert step.build is True and step.report["accepted"]
    assert step.drift == {("column_renamed", "orders", "comment")}
    assert [s["where"] for s in step.report["stale_overrides"]] == ["tables.orders.columns.note"]
    assert step.report["stale_overrides"][0]["line"] == 5
    assert step.runs == [("quality_check_job", ""), ("query_job", "notes")]  # it read orders.note

    # 4. a measure tripled in a 30-row table: the small-table test sees it; the quality check
    # the daemon ran for it evaluated the warehouse checks of the affected table
    step = replay.step(lambda: put(data / "products.csv", products(scale=3.0)))
    assert step.build is True
    assert step.drift == {("distribution_shift", "products", "sale_price")}
    assert step.runs == [("quality_check_job", ""), ("query_job", "prices")]
    checked = step.run_of("quality_check_job")
    assert checked.tags["dia/tables"] == "products"
    assert {("warehouse/products", "key_validity"), ("warehouse/products", "row_count_reconciliation")} <= set(
        replay.run_checks(checked))

    # 5. half a column blanked: a null-rate jump
    step = replay.step(lambda: put(data / "customers.csv", customers(phone=True, blank_city=True)))
    assert step.build is True and step.report["accepted"]
    assert ("null_rate_jump", "customers", "city") in step.drift
    assert ("query_job", "cities") in step.runs and ("quality_check_job", "") in step.runs
    assert ("query_job", "retired") not in step.runs  # not a registered question

    # 6. a key broken: the key stays, key_validity fails with the offending rows, the build is
    # not installed (a verdict: asked once), the report is failed/stale, a failed check and a
    # review item appear
    t6 = time.time()
    step = replay.step(lambda: put(data / "customers.csv", customers(phone=True, blank_city=True, broken=True)))
    assert step.build is False
    assert ("primary_key_broken", "customers", None) in step.drift
    manifest = json.loads((ws / "schema" / "manifest.json").read_text())
    customers_table = next(t for t in manifest["tables"] if t["name"] == "customers")
    assert customers_table["primary_key"] == ["customer_id"] and customers_table["primary_key_origin"] == "previous"
    assert any(fk["ref_table"] == "customers" for t in manifest["tables"] for fk in t["foreign_keys"])
    report = step.report
    assert report["accepted"] is False and report["installed"] is False and report["stale_reason"]
    broken = [k for k in report["key_validity"] if k["table"] == "customers" and k["kind"] == "primary_key"][0]
    assert not broken["passed"] and broken["duplicate_keys"] == 3 and broken["examples"]
    # key_validity fails on each table whose keys broke, reported by the drift sensor
    checks = replay.sensor_checks(["customers", "orders", "products"], t6)
    assert ("warehouse/customers", "key_validity", False) in checks and {c[1:] for c in checks} == {("key_validity", False)}
    # ...and on `warehouse` too while the daemon's code location predates the table assets (the
    # harness keeps the location it started with, loaded before the first build): the break
    # shows on the asset that location has
    held = replay.planned_check_assets(step.run_of("quality_check_job"))
    assert (("warehouse", "key_validity", False) in checks) == ("warehouse" in held), (held, checks)
    # the quality check the daemon ran fails too, with the rejected build's offending rows,
    # instead of passing on the old warehouse
    key_check = replay.run_checks(step.run_of("quality_check_job"))[("warehouse/customers", "key_validity")]
    assert not key_check.passed and key_check.description.startswith("STALE")
    assert broken["examples"][0] in key_check.metadata["details"].value
    assert "primary_key_broken customers" in (ws / "review" / "drift_review.md").read_text()
    assert ("quality_check_job", "") in step.runs and ("query_job", "cities") in step.runs
    assert not any(job == "schema_job" for job, _ in step.runs)  # no schema change: no rebuild to repeat
    assert "STALE" in (ws / "validation" / "report.md").read_text()
    seen = live.instance.fetch_observations(AssetKey("validation_report"), limit=1).records[0]
    meta = seen.asset_observation.metadata
    assert meta["accepted"].value is False and meta["stale"].value is True

    # 7. exact duplicates added to a keyed table: recorded as drift (the key break still stands)
    step = replay.step(lambda: put(data / "orders.csv", orders(note="comment", dups=12)))
    assert ("duplicate_rows_grew", "orders", None) in step.drift
    assert step.build is False and step.report["accepted"] is False

    # 8. a file deleted: its raw partition is retired; schema drift after a failed build asks
    # for a rebuild with the change applied (which the daemon runs, and which the broken key
    # still refuses)
    step = replay.step(lambda: (data / "products.csv").unlink())
    assert replay.partitions() == ["customers_csv", "orders_csv"]
    assert ("source_removed", "products", None) in step.drift
    assert ("schema_job", "") in step.runs and ("query_job", "prices") in step.runs
    assert step.run_of("schema_job").status == DagsterRunStatus.FAILURE
    assert step.report["accepted"] is False

    # 9. a file touched, not changed: nothing runs, nothing drifts, the report stays failed
    later = time.time() + 60
    step = replay.step(lambda: os.utime(data / "orders.csv", (later, later)))
    assert step.builds == [] and step.runs == [] and step.drift is None
    assert step.report["accepted"] is False and step.report["stale_reason"]
    assert {t.skip_reason for t in live.finished_ticks("new_data_sensor", after=live.started_at)} == {
        "no change in the data folder"}
    shown = CliRunner().invoke(app, ["status", "--workspace", str(ws)])
    assert shown.exit_code == 1 and "accepted: false" in shown.output and "STALE:" in shown.output
