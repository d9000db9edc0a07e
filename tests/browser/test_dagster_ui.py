"""Issue 13: what a person sees in the Dagster UI after `make demo && make ui`, in a real browser.

One `dagster dev` serves the whole module (tests/browser/conftest.py); the tests run in file
order, so the materialization launched from the UI is in place for the pages after it.
Statuses are read from the pages; GraphQL is used only to learn what to look for (run ids,
check names), never to decide a status.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import pytest

from tests.browser.server import DagsterUI

try:
    from playwright.sync_api import expect
except ImportError:  # the `chromium` fixture skips (fails in CI) and says what is missing
    expect = None

pytestmark = pytest.mark.browser

PIPELINE = ["raw_files", "interpretation", "schema_manifest", "validation_report", "query_result",
            "memory_lessons", "lineage_report"]
RAW_FILES = ["staff.csv", "shifts.jsonl", "hospital.xlsx", "payroll.parquet"]
RUN_TIMEOUT_S = 900
def manifest_tables(ui: DagsterUI) -> list[str]:
    """The refined tables of the build `dia demo` made (the table assets come from them)."""
    manifest = json.loads((ui.workspace / "schema" / "manifest.json").read_text(encoding="utf-8"))
    return [t["name"] for t in manifest["tables"]]


def runs(ui: DagsterUI) -> list[dict]:
    data = ui.graphql("{ runsOrError { ... on Runs { results { runId status tags { key value } } } } }")
    return data["runsOrError"]["results"]


def check_names(ui: DagsterUI, path: list[str]) -> list[str]:
    data = ui.graphql(
        "query($key: AssetKeyInput!) { assetNodeOrError(assetKey: $key) { ... on AssetNode {"
        " assetChecksOrError { ... on AssetChecks { checks { name } } } } } }",
        {"key": {"path": path}})
    node = data["assetNodeOrError"]
    return sorted(c["name"] for c in (node.get("assetChecksOrError") or {}).get("checks", []))


def open_asset_graph(pg: Any) -> None:
    """The global lineage with every group expanded (the graph's own Alt+E shortcut)."""
    pg.goto("/asset-groups")
    expect(pg.get_by_role("button", name=re.compile(r"Materialize all"))).to_be_visible()
    expect(pg.get_by_text("schema_creator", exact=True).first).to_be_visible()
    pg.keyboard.press("Alt+e")
    expect(pg.get_by_text("memory_lessons", exact=True).first).to_be_visible()
    pg.get_by_role("button", name="panel_show_right").first.click()  # hide the asset tree: more graph


def test_asset_graph_shows_the_pipeline(page: Any, dagster_ui: DagsterUI, screenshot: Any) -> None:
    open_asset_graph(page)
    for name in PIPELINE:
        expect(page.get_by_text(name, exact=True).first).to_be_visible()
    screenshot(page, "asset-graph")


def manifest_table(ui: DagsterUI, name: str) -> dict:
    manifest = json.loads((ui.workspace / "schema" / "manifest.json").read_text(encoding="utf-8"))
    return next(t for t in manifest["tables"] if t["name"] == name)


def test_asset_graph_has_one_asset_per_refined_table(page: Any, dagster_ui: DagsterUI) -> None:
    tables = manifest_tables(dagster_ui)
    assert len(tables) >= 5
    open_asset_graph(page)
    expect(page.get_by_text("warehouse", exact=True).first).to_be_visible()
    for table in tables:
        page.goto(f"/assets/warehouse/{table}")
        # an asset the code location defines has a definition (a missing key has none)
        expect(page.get_by_text("Code location", exact=True)).to_be_visible()
        expect(page.get_by_role("link", name="raw_files").first).to_be_visible()


def _launch_from_dialog(pg: Any) -> None:
    """The dialog after "Materialize all" must be launchable as it opens: no choice to make first."""
    dialog = pg.get_by_role("dialog")
    launch = dialog.get_by_role("button", name="Launch backfill")
    expect(launch).to_be_enabled(timeout=15_000)
    # the button is enabled while the dialog still loads its partition sets; a click then
    # launched nothing under load (fresh-clone CI), so the dialog is let finish first
    expect(dialog.get_by_text("Loading pipeline and partition sets")).to_have_count(0)
    launch.click()


def _new_runs(ui: DagsterUI, before: set[str]) -> list[dict]:
    """Runs started since `before`, not counting the ones sensors and schedules request."""
    return [r for r in runs(ui) if r["runId"] not in before
            and not any(t["key"] in ("dagster/sensor_name", "dagster/schedule_name") for t in r["tags"])]


def backfills(ui: DagsterUI) -> list[dict]:
    data = ui.graphql("{ partitionBackfillsOrError { ... on PartitionBackfills { results { id status } } } }")
    return data["partitionBackfillsOrError"]["results"]


def test_materialize_all_launches_in_one_click(page: Any, dagster_ui: DagsterUI, screenshot: Any) -> None:
    """Issue 13: "Materialize all" on the whole graph, then the dialog's launch button as it
    opens (All partitions preselected, nothing to choose); the backfill must complete. Issue 31:
    without a model no question is answered, so the backfill ends *Failed* (not Succeeded),
    after building every table, with all questions of each question asset in one run."""
    before = {b["id"] for b in backfills(dagster_ui)}
    open_asset_graph(page)
    page.get_by_role("button", name=re.compile("Materialize all")).click()
    dialog = page.get_by_role("dialog")
    expect(dialog.get_by_text("All partitions").first).to_be_visible()
    screenshot(page, "materialize-all")
    _launch_from_dialog(page)
    deadline = time.monotonic() + 60
    new: list[dict] = []
    while time.monotonic() < deadline and not new:
        new = [b for b in backfills(dagster_ui) if b["id"] not in before]
        time.sleep(1)
    assert new, "Launch backfill started no backfill"
    page.goto("/runs?tab=backfills")
    row = page.locator("[data-index]").filter(has_text=new[0]["id"])
    text = _final_text(page, row, f"backfill {new[0]['id']}", dagster_ui)
    if "Success" in text or "Canceled" in text:
        pytest.fail(f"backfill {new[0]['id']} shows {text!r}: no question can be answered without a model")
    expect(row.first).to_contain_text("partitions")
    screenshot(page, "backfill")
    backfill_runs = [r for r in runs(dagster_ui) if any(t == {"key": "dagster/backfill", "value": new[0]["id"]}
                                                         for t in r["tags"])]
    ranged = [r for r in backfill_runs if any(t["key"] == "dagster/asset_partition_range_start" for t in r["tags"])]
    assert len(ranged) == 2, backfill_runs  # query_result and analysis_result: one run each for every question
    assert {r["status"] for r in ranged} == {"FAILURE"}
    page.goto("/assets/query_result?view=partitions")
    expect(page.get_by_text(re.compile(r"Materialized \(0\)")).first).to_be_visible()
    screenshot(page, "query-result-partitions")


def _wait_for_new_runs(ui: DagsterUI, before: set[str], timeout_s: float = 60) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        launched = _new_runs(ui, before)
        if launched:
            return launched
        time.sleep(1)
    pytest.fail(f"no run started within {timeout_s:.0f} s")


ENDED = re.compile("Success|Failure|Failed|failures|Canceled")


def _final_text(pg: Any, row: Any, what: str, ui: DagsterUI) -> str:
    """The text of a Runs-page row once it shows an end. A load is given time to render: the page
    fetches its rows after the load event, and read at once it looked empty for minutes under
    load; only then is it reloaded (the list is not always refreshed in place)."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        try:
            expect(row.first).to_contain_text(ENDED, timeout=20_000)
            return row.first.inner_text()
        except AssertionError:
            pg.reload()
    pytest.fail(f"{what} did not finish within {RUN_TIMEOUT_S} s\n{ui.log_tail(60)}")


def _wait_for_status(pg: Any, run_id: str, ui: DagsterUI, expected: str = "Success") -> None:
    """Until the run's row on the Runs page ends; an end other than `expected` fails, with the log."""
    # the Runs page is a virtualized table of divs (no `row` role), one `data-index` per run
    row = pg.locator("[data-index]").filter(has_text=run_id[:8])
    text = _final_text(pg, row, f"run {run_id}", ui)
    if expected not in text:
        pytest.fail(f"run {run_id} shows {text!r} on the Runs page, not {expected}\n{ui.log_tail(60)}")


def _assert_checks_pass(pg: Any, ui: DagsterUI, path: list[str]) -> list[str]:
    names = check_names(ui, path)
    assert names, f"no checks on {'/'.join(path)}"
    pg.goto(f"/assets/{'/'.join(path)}?view=checks")
    expect(pg.get_by_text(f"Checks ({len(names)})")).to_be_visible()
    for name in names:
        item = pg.get_by_title(name, exact=True).first.locator("xpath=..")
        expect(item).to_contain_text("Succeeded")
    return names


def test_table_assets_checks_pass(page: Any, dagster_ui: DagsterUI, screenshot: Any) -> None:
    for table in manifest_tables(dagster_ui):
        names = _assert_checks_pass(page, dagster_ui, ["warehouse", table])
        assert {"row_count_reconciliation", "key_validity"} <= set(names), (table, names)
        if table == "staff":
            expect(page.get_by_text("Passed").first).to_be_visible()
            screenshot(page, "checks")


def test_table_asset_shows_column_lineage(page: Any, dagster_ui: DagsterUI, screenshot: Any) -> None:
    """Open-source Dagster does not draw `dagster/column_lineage`; our Markdown table must show
    each column of `staff` with the file column it comes from."""
    table = manifest_table(dagster_ui, "staff")
    page.goto("/assets/warehouse/staff")
    lineage = page.get_by_role("table").filter(has_text=f"{table['source_ref']}.").filter(has_text="<-")
    expect(lineage.first).to_be_visible()
    for column in table["columns"]:
        row = lineage.first.get_by_role("row").filter(has_text=f"{table['source_ref']}.{column['original_name']}")
        expect(row.first).to_contain_text(column["name"])
    page.get_by_text("column_lineage", exact=True).first.scroll_into_view_if_needed()
    screenshot(page, "table-asset")


QUESTION = "staff_count_per_role"


def _materialize_one_question(pg: Any, ui: DagsterUI, expected: str = "Success") -> list[dict]:
    """From the partitions page: Materialize, pick one question, launch; wait on the Runs page."""
    before = {r["runId"] for r in runs(ui)}
    pg.goto("/assets/query_result?view=partitions")
    pg.get_by_role("button", name=re.compile("Materialize")).first.click()
    dialog = pg.get_by_role("dialog")
    confirm = dialog.get_by_role("button", name="Confirm")  # "upstream not materialized yet"
    expect(dialog.get_by_text("Select a partition or create one").or_(confirm)).to_be_visible()
    if confirm.is_visible():
        confirm.click()
    dialog.get_by_text("Select a partition or create one").click()
    pg.keyboard.type(QUESTION)
    pg.get_by_role("menuitem", name=re.compile(f"^{QUESTION}")).click()
    dialog.get_by_text("Launch runs to materialize").click()  # closes the partition menu
    dialog.get_by_role("button", name="Launch 1 run").click()
    launched = _wait_for_new_runs(ui, before)
    pg.goto("/runs")
    for run in launched:
        _wait_for_status(pg, run["runId"], ui, expected)
    return launched


def test_unanswered_questions_are_not_shown_as_success(page: Any, dagster_ui: DagsterUI, screenshot: Any) -> None:
    """Without a model a question gets no answer: its run fails, its partition is not
    materialized, and its `answered` check fails and says why."""
    launched = _materialize_one_question(page, dagster_ui, expected="Failure")
    expect(page.locator("[data-index]").filter(has_text=launched[0]["runId"][:8])).to_contain_text("Failure")
    screenshot(page, "runs")
    page.goto("/assets/query_result?view=partitions")
    expect(page.get_by_text(re.compile(r"Materialized \(0\)")).first).to_be_visible()
    page.goto("/assets/query_result?view=checks")
    item = page.get_by_title("answered", exact=True).first.locator("xpath=..")
    expect(item).to_contain_text("Failed")
    expect(page.get_by_text("Failed", exact=True).last).to_be_visible()
    expect(page.get_by_text(re.compile(r"^no_model: ")).first).to_be_visible()
    screenshot(page, "query-result-check")


def test_declared_automation_is_on_and_says_what_it_runs(page: Any, dagster_ui: DagsterUI, screenshot: Any) -> None:
    """A fresh instance: the project's declarative automation sensor is listed and running, and
    its page says which assets follow which (the catalog after each new validation report)."""
    page.goto("/automation")
    row = page.locator("[data-index]").filter(has_text="dia_automation")
    expect(row).to_contain_text("Automation condition sensor")
    expect(page.locator("[data-index]").filter(has_text="nightly_refresh")).to_be_visible()
    # each row's running toggle (beside its selection box) appears once its state has loaded
    for name in ("dia_automation", "new_data_sensor", "weekly_memory_consolidation"):
        expect(page.locator("[data-index]").filter(has_text=name).locator("input[type=checkbox]")).to_have_count(2)
    screenshot(page, "automation")
    page.goto(row.get_by_role("link").first.get_attribute("href"))
    expect(page.get_by_text(re.compile(r"semantic_catalog: eager")).first).to_be_visible()
    expect(page.locator("tr").filter(has_text="Running").locator("input[type=checkbox]")).to_be_checked()
    expect(page.get_by_text(re.compile(r"materializations? requested")).first).to_be_visible()
    screenshot(page, "automation-sensor")
