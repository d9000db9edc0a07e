"""Issue 26, live: the faults of the issue against a real Dagster daemon (sensors on short
intervals, the run queue with its one-writer limit, runs in their own processes), over a temp
workspace holding a small customers/orders export. After each step the installed state is
asserted: `dia status`, the report and the warehouse's rows. No time is asserted."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest
from dagster import DagsterEventType, DagsterRunStatus
from typer.testing import CliRunner

from dia_assets.agents.schema_creator.attempt import read_attempt
from dia_assets.agents.schema_creator.state import read_state
from dia_assets.cli.app import app
from tests.faults.live_daemon import NEW_DATA, LiveDaemon, loop_floor_patchable, scratch
from tests.faults.state_harness import count, export, write_csv
from tests.memory_fixtures import db_url, pg_server  # noqa: F401

pytestmark = [pytest.mark.live, pytest.mark.heavy]  # heavy: handed to a worker first


def orders_text(n: int) -> str:
    return "order_id,customer_id,total\n" + "".join(f"{o},{o % 10 + 1},{o * 1.5}\n" for o in range(1, n + 1))


def status(ws: Path) -> tuple[int, str]:
    out = CliRunner().invoke(app, ["status", "--workspace", str(ws)])
    return out.exit_code, out.output


def tables(ws: Path) -> set[str]:
    return {t["name"] for t in json.loads((ws / "schema" / "manifest.json").read_text())["tables"]}


def steps_of(daemon: LiveDaemon, run_id: str) -> tuple[set[str], set[str]]:
    """Steps started and steps skipped in a run."""
    events = daemon.instance.all_logs(run_id, of_type={DagsterEventType.STEP_START, DagsterEventType.STEP_SKIPPED})
    started = {e.step_key for e in events if e.dagster_event.event_type == DagsterEventType.STEP_START}
    skipped = {e.step_key for e in events if e.dagster_event.event_type == DagsterEventType.STEP_SKIPPED}
    return started, skipped


@pytest.fixture
def live(tmp_path: Path, db_url: str):  # noqa: F811
    assert loop_floor_patchable(), "Dagster's sensor loop floor or dequeue interval moved: update live_daemon.py"
    with scratch(tmp_path) as base:  # in memory where the machine has it
        data, ws = base / "data", base / "ws"
        export(data)  # customers (10) and orders (20)
        daemon = LiveDaemon(base, data, ws, {"DIA_SETTLE_S": "1", "DIA_BUILD_TRIES": "2",
                                                 "DIA_MEMORY_URL": db_url, "DIA_WRITER_WAIT_S": "120"})
        daemon.start()
        try:
            yield daemon
        finally:
            daemon.stop()
            print(daemon.report_timeline())


def test_the_faults_of_issue_26_against_a_live_daemon(live: LiveDaemon):
    data, ws = live.data, live.ws
    warehouse = ws / "warehouse.duckdb"

    # 0. first start on a folder never built: one build, accepted, every step run
    [first] = live.builds_since(set())
    assert first.status == DagsterRunStatus.SUCCESS, live.log_tail()
    assert read_state(ws).verdict == "accepted" and status(ws)[0] == 0
    assert count(warehouse, "orders") == 20 and tables(ws) == {"customers", "orders"}

    # 1. settle time: a file being written (a few bytes more every 0.05 s) is not read: it keeps
    # moving until the data sensor has twice reported waiting for it to settle; then the writer
    # stops in the middle of a line (`41,2` of `41,2,61.5`)
    path = data / "orders.csv"
    before = live.run_ids()
    full = orders_text(60)
    cut = full.index("\n41,") + len("\n41,2")
    writing, sizes = live.mark(), iter(range(10**6))

    def moving() -> list | None:
        for _ in range(4):
            path.write_text(full[:200 + next(sizes) % (cut - 200)])
            time.sleep(0.05)
        waits = [t for t in live.ticks(NEW_DATA, after=writing)
                 if (t.skip_reason or "").startswith("waiting for orders.csv to settle")]
        return waits if len(waits) >= 2 else None
    live.wait_for("new_data_sensor to report twice that orders.csv is still being written", moving,
                  lambda: live.describe_ticks(NEW_DATA))
    assert not live.run_ids("build_job") - before, "a build was requested while the file was being written"
    path.write_text(full[:cut])
    # ...the truncated record is flagged: the build is refused (a verdict: not retried), the
    # warehouse in place is kept
    [cut_run] = live.builds_since(before)
    assert cut_run.status == DagsterRunStatus.FAILURE and cut_run.tags["dia/change"] == "changed: orders.csv"
    code, text = status(ws)
    assert code == 1 and "STALE" in text.splitlines()[0]
    assert count(warehouse, "orders") == 20
    report = json.loads((ws / "validation" / "report.json").read_text())
    assert not report["accepted"] and not report["installed"]
    # the whole file arrives: built and accepted
    before = live.run_ids()
    path.write_text(full)
    [whole] = live.builds_since(before)
    assert whole.status == DagsterRunStatus.SUCCESS and read_state(ws).verdict == "accepted"
    assert count(warehouse, "orders") == 60

    # 2. a referenced id rewritten as codes (T1, T2, ...): the build fails; it is asked for once
    # more (DIA_BUILD_TRIES=2) unless it was a verdict; never accepted, the old warehouse kept
    before = live.run_ids()
    write_csv(data / "customers.csv", ["customer_id", "name"], [[f"T{i}", f"C{i}"] for i in range(1, 11)])
    crashed = live.builds_since(before)
    assert all(r.status == DagsterRunStatus.FAILURE for r in crashed) and 1 <= len(crashed) <= 2
    code, text = status(ws)
    assert code == 1 and text.startswith("dia status: STALE: ")
    assert read_state(ws).report.stale_reason and count(warehouse, "orders") == 60
    before = live.run_ids()
    export(data, orders=60)  # the ids back
    [fixed] = live.builds_since(before)
    assert fixed.status == DagsterRunStatus.SUCCESS and status(ws)[0] == 0

    # 3a. the run's process killed before the build recorded its first step (the attempt record
    # is still the previous run's): the sensor finds the worker's pid gone, marks the run failed
    # and asks again; the retry installs the grown file
    before = live.run_ids()
    live.pause_start.touch()
    path.write_text(orders_text(70))
    reached = Path(str(live.pause_start) + ".reached")
    live.wait_for("the build to start (the test hook's mark)", reached.exists)
    # the run asked for this change (the data sensor's pending request), held before its first step
    [held] = live.wait_for("the data sensor to store its request", lambda: live.requested() or None)
    assert held.run_id not in before and read_attempt(ws).attempt_id != held.run_id
    os.kill(int(reached.read_text()), signal.SIGKILL)
    live.pause_start.unlink()
    early, retried = live.builds_since(before)
    assert early.run_id == held.run_id, live.describe()
    assert early.status == DagsterRunStatus.FAILURE and retried.status == DagsterRunStatus.SUCCESS, live.describe()
    assert retried.tags["dia/request"] == early.tags["dia/request"] and retried.tags["dia/try"] == "2"
    assert read_state(ws).verdict == "accepted" and count(warehouse, "orders") == 70

    # 3b. the daemon killed (with its code server and the run) while the warehouse step loads a
    # grown file: STALE at once; after a restart the build is redone and the grown file installed
    before = live.run_ids()
    live.pause.touch()
    path.write_text(orders_text(80))
    reached = Path(str(live.pause) + ".reached")
    live.wait_for("the build to reach the load (the test hook's mark)", reached.exists)
    attempt = read_attempt(ws)
    assert attempt.step == "load" and attempt.pid == int(reached.read_text())
    # the run asked for this change: the one the attempt records
    [killed_run] = live.wait_for("the data sensor to store its request", lambda: live.requested() or None)
    assert killed_run.run_id == attempt.attempt_id and killed_run.run_id not in before
    os.kill(attempt.pid, signal.SIGKILL)  # the run worker (the code server starts it in its own group)
    live.kill()
    live.wait_for("the killed build to read STALE", lambda: read_state(ws).verdict == "stale",
                  lambda: read_state(ws).verdict)
    code, text = status(ws)
    assert code == 1 and "killed" in text.splitlines()[0], text
    assert count(warehouse, "orders") == 70
    live.pause.unlink()
    live.mark()
    live.start()
    redone = live.builds_since(before | {killed_run.run_id})
    assert [r.status for r in redone] == [DagsterRunStatus.SUCCESS], live.describe()
    assert redone[0].tags["dia/request"] == killed_run.tags["dia/request"] and redone[0].tags["dia/try"] == "2"
    assert live.instance.get_run_by_id(killed_run.run_id).status == DagsterRunStatus.FAILURE
    assert read_state(ws).verdict == "accepted" and count(warehouse, "orders") == 80

    # 4. the same table in a second format (the same rows plus two): one table, not customers_2
    before = live.run_ids()
    rows = [{"customer_id": i, "name": f"C{i}"} for i in range(1, 13)]
    (data / "customers.json").write_text(json.dumps(rows))
    [both] = live.builds_since(before)
    assert "customers_2" not in tables(ws)
    assert both.status == DagsterRunStatus.SUCCESS and read_state(ws).verdict == "accepted"
    assert count(warehouse, "customers") == 12

    # 5. a file renamed: the build validates and refreshes the catalog (nothing skipped), the
    # retired table leaves the warehouse, the report and the catalog
    before = live.run_ids()
    path.rename(data / "sales.csv")
    [renamed] = live.builds_since(before)
    started, skipped = steps_of(live, renamed.run_id)
    assert renamed.status == DagsterRunStatus.SUCCESS and not skipped
    assert {"warehouse", "warehouse_checks", "validation_report"} <= started
    assert "orders" not in tables(ws) and "sales" in tables(ws)
    report = json.loads((ws / "validation" / "report.json").read_text())
    assert report["accepted"] and "orders" not in {r["table"] for r in report["row_counts"]}
    # the catalog follows the new report in a run of its own (dia_automation: eager), created
    # after the build stored that report (the automation may launch it before the build run ends)
    [reported] = [e.timestamp for e in live.instance.all_logs(renamed.run_id,
                                                              of_type=DagsterEventType.ASSET_MATERIALIZATION)
                  if e.dagster_event.asset_key.to_user_string() == "validation_report"]

    def catalog_runs() -> list[tuple[str, DagsterRunStatus, float]]:
        return [(r.dagster_run.run_id, r.dagster_run.status, r.create_timestamp.timestamp())
                for r in live.instance.get_run_records()
                if r.create_timestamp.timestamp() >= reported and r.dagster_run.run_id != renamed.run_id
                and "semantic_catalog" in steps_of(live, r.dagster_run.run_id)[0]]

    live.wait_for("the catalog refresh after the renamed file's report",
                  lambda: [run for run in catalog_runs() if run[1] == DagsterRunStatus.SUCCESS] or None,
                  lambda: f"report at {reported:.1f}; catalog runs since: {catalog_runs()}")
    catalog = json.loads((ws / "catalog" / "semantic_catalog.json").read_text())
    entities = {n["table"] for n in catalog["nodes"] if n["level"] == "entity"}
    assert "orders" not in entities and "sales" in entities
    assert status(ws)[0] == 0
