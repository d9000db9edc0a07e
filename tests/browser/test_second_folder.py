"""Issue 31: your own data in the UI. A second folder is built and served in the same Dagster
instance after the example (a switch of DIA_DATA_DIR and DIA_WORKSPACE, as a person trying
their own data after `make demo` does): the UI lists the new folder's tables and none of the
example's questions, and no sensor reacts with a false reason.

The example's `dagster dev` (tests/browser/conftest.py), watched and used by test_dagster_ui.py,
is ended here and the new folder served on the same DAGSTER_HOME (this module is collected last);
statuses and lists are read from the pages, GraphQL tells what ran and why.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import TIMEOUT_MS, VIEWPORT, end_session
from tests.browser.server import DagsterUI, dagster_dev
from tests.data_folders import folder_b

try:
    from playwright.sync_api import expect
except ImportError:  # the `chromium` fixture skips (fails in CI) and says what is missing
    expect = None

pytestmark = pytest.mark.browser

HOSPITAL_QUESTIONS = ["staff_count_per_role", "beds_per_department"]  # two of the example's
OUR_SENSORS = {"new_data_sensor", "review_gate_sensor", "drift_sensor"}
_RUNS = "{ runsOrError { ... on Runs { results { runId tags { key value } } } } }"
_TICKS = """{ workspaceOrError { ... on Workspace { locationEntries { locationOrLoadError {
  ... on RepositoryLocation { repositories { sensors { name sensorState {
    ticks(limit: 50, statuses: [STARTED, SKIPPED, SUCCESS, FAILURE]) { status skipReason runIds } } } } } } } } } }"""


@dataclass
class Switch:
    ui: DagsterUI  # over the second folder
    before: set[str]  # the runs of the instance before the switch
    first_tables: list[str]  # the first folder's refined tables


def _runs(ui: DagsterUI) -> list[dict[str, Any]]:
    return [{"id": r["runId"], "tags": {t["key"]: t["value"] for t in r["tags"]}}
            for r in ui.graphql(_RUNS)["runsOrError"]["results"]]


def _ticks(ui: DagsterUI) -> dict[str, list[dict[str, Any]]]:
    data = ui.graphql(_TICKS)
    return {s["name"]: s["sensorState"]["ticks"] for e in data["workspaceOrError"]["locationEntries"]
            for repo in e["locationOrLoadError"]["repositories"] for s in repo["sensors"]}


def _tables(ui: DagsterUI) -> list[str]:
    manifest = json.loads((ui.workspace / "schema" / "manifest.json").read_text(encoding="utf-8"))
    return sorted(t["name"] for t in manifest["tables"])


def _question_keys(ui: DagsterUI) -> list[str]:
    data = ui.graphql('{ assetNodeOrError(assetKey: {path: ["query_result"]}) { ... on AssetNode { partitionKeys } } }')
    return data["assetNodeOrError"]["partitionKeys"]


@pytest.fixture(scope="module")
def second_folder(dagster_ui: DagsterUI, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Switch]:
    """The example built, watched and used (test_dagster_ui.py), then the music folder served
    in the same instance."""
    base = tmp_path_factory.mktemp("second-folder")
    music = folder_b(base / "data")
    (base / "music").mkdir()
    assert set(HOSPITAL_QUESTIONS) <= set(_question_keys(dagster_ui))  # the first folder's own questions
    before = {r["id"] for r in _runs(dagster_ui)}
    end_session(dagster_ui)
    with dagster_dev(base / "music", music, dagster_ui.home) as ui:
        yield Switch(ui, before, _tables(dagster_ui))


@pytest.fixture
def page(chromium: Any, second_folder: Switch) -> Iterator[Any]:
    """A page on the second folder's UI (the conftest's `page` serves the example's)."""
    context = chromium.new_context(viewport=VIEWPORT, base_url=second_folder.ui.url)
    context.add_init_script("window.localStorage.setItem('communityNux', '1')")
    context.set_default_timeout(TIMEOUT_MS)
    pg = context.new_page()
    try:
        yield pg
    finally:
        context.close()


def test_second_folder_lists_its_tables_and_no_foreign_questions(page: Any, second_folder: Switch) -> None:
    ui = second_folder.ui
    tables = _tables(ui)
    assert tables == ["albums", "artists"]
    for table in tables:
        page.goto(f"/assets/warehouse/{table}")
        # an asset the code location defines has a definition (a missing key has none)
        expect(page.get_by_text("Code location", exact=True)).to_be_visible()
    page.goto("/assets/warehouse")
    expect(page.get_by_text("albums").first).to_be_visible()
    expect(page.get_by_text("artists").first).to_be_visible()
    # The example's tables may still be listed here: Dagster's catalog shows every asset the
    # instance has history for, defined or not. What the code location defines is the music's.
    page.screenshot(path=str(ui.log.parent / "second-folder-assets.png"))
    keys = {"/".join(n["assetKey"]["path"]) for n in ui.graphql("{ assetNodes { assetKey { path } } }")["assetNodes"]}
    assert {"warehouse/albums", "warehouse/artists"} <= keys
    assert "staff" in second_folder.first_tables
    assert not keys & {f"warehouse/{t}" for t in second_folder.first_tables}
    assert _question_keys(ui) == []
    page.goto("/assets/query_result?view=partitions")
    expect(page.get_by_text("query_result").first).to_be_visible()
    for qid in HOSPITAL_QUESTIONS:
        assert page.get_by_text(qid).count() == 0, qid
    # where questions come from, said where the asset is described
    page.goto("/assets/query_result")
    expect(page.get_by_text("add a questions.yaml", exact=False).first).to_be_visible()


def test_switching_folders_triggers_no_false_reaction(second_folder: Switch) -> None:
    ui = second_folder.ui
    after = [r for r in _runs(ui) if r["id"] not in second_folder.before]
    assert not [r for r in _runs(ui) if r["tags"].get("dia/trigger") == "overrides edited"]
    # the music folder was built by `dia demo`: our sensors launch nothing after the switch
    assert not [r for r in after if r["tags"].get("dagster/sensor_name") in OUR_SENSORS], after
    ticks = _ticks(ui)
    for name in ("new_data_sensor", "review_gate_sensor"):
        reasons = [t["skipReason"] or "" for t in ticks[name]]
        assert any(r.startswith("data folder changed:") and str(Path(ui.workspace).resolve()) in r
                   for r in reasons), (name, reasons)
