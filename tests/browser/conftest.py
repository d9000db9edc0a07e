"""Fixtures for the browser tests: Debian's chromium driven by Playwright, and one `dagster dev`
over the example workspace for the session (test_second_folder.py, collected last, ends it early
and serves another folder in its instance).

Without chromium (or Playwright) the tests skip with the reason, except where a browser is
required (`CI=true` or `DIA_REQUIRE_BROWSER=1`, as `.ci/run` sets): there they fail.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser.server import ROOT, DagsterUI, dagster_dev

SCREENSHOTS = ROOT / "docs" / "screenshots"
VIEWPORT = {"width": 1280, "height": 800}
TIMEOUT_MS = 60_000  # generous: the machines are shared and the UI polls


def _required() -> bool:
    return os.environ.get("CI", "").lower() in ("true", "1") or os.environ.get("DIA_REQUIRE_BROWSER") == "1"


def _unavailable(reason: str) -> None:
    if _required():
        pytest.fail(f"browser tests are required here (CI / DIA_REQUIRE_BROWSER) but {reason}", pytrace=False)
    pytest.skip(reason)


def chromium_path() -> str | None:
    """`DIA_CHROMIUM`, else Debian's `chromium` on PATH (Playwright's own download is not used)."""
    explicit = os.environ.get("DIA_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).exists() else None
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def chromium() -> Iterator[Any]:
    """A headless chromium, or a skip (a failure in CI) saying what is missing."""
    executable = chromium_path()
    if executable is None:
        _unavailable("chromium is not installed (Debian: `apt-get install -y chromium`; .ci/run does it)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (`pip install -e '.[dev]'`)")
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


LAST = "test_second_folder.py"  # ends the example session (`end_session`): its tests run last
_OPEN: dict[str, contextlib.ExitStack] = {}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: item.path.name == LAST)  # stable: file order otherwise kept


@pytest.fixture(scope="session")
def dagster_ui(chromium: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DagsterUI]:  # noqa: ARG001 - no server without a browser
    """`dagster dev` on a free loopback port over a workspace `dia demo` built; stopped at the
    end, or earlier by `end_session`."""
    with contextlib.ExitStack() as stack:
        ui = stack.enter_context(dagster_dev(tmp_path_factory.mktemp("dagster-ui")))
        _OPEN[ui.url] = stack
        yield ui
        _OPEN.pop(ui.url, None)


def end_session(ui: DagsterUI) -> None:
    """Stop the example's `dagster dev` now (its instance, DAGSTER_HOME, is kept), so that
    another folder can be served in the same instance, as a person switching folders does."""
    _OPEN.pop(ui.url).close()


@pytest.fixture
def page(chromium: Any, dagster_ui: DagsterUI) -> Iterator[Any]:
    """A fresh page at 1280x800 with the one-time community dialog already dismissed."""
    context = chromium.new_context(viewport=VIEWPORT, base_url=dagster_ui.url)
    context.add_init_script("window.localStorage.setItem('communityNux', '1')")
    context.set_default_timeout(TIMEOUT_MS)
    pg = context.new_page()
    try:
        yield pg
    finally:
        context.close()


@pytest.fixture
def screenshot(dagster_ui: DagsterUI):  # noqa: ANN201
    """Save a screenshot: into docs/screenshots/ with DIA_UPDATE_SCREENSHOTS=1, else beside the
    server log (so a failing run can be looked at)."""

    def take(pg: Any, name: str) -> Path:
        folder = SCREENSHOTS if os.environ.get("DIA_UPDATE_SCREENSHOTS") == "1" else dagster_ui.log.parent
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.png"
        pg.screenshot(path=str(path))
        return path

    return take
