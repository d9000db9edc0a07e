"""Shared fixtures: offline, deterministic, no real model."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.pop("DIA_MODEL", None)
if "DIA_PGDATA_HOME" not in os.environ:
    # as root, embedded PostgreSQL data under a private test folder is kept here instead of
    # /var/lib/dia/pgdata (platform/memory/placement.py); removed at exit, after pgserver's own
    # exit hooks (registered later, so run earlier) have stopped the servers
    _PGDATA_HOME = Path(tempfile.mkdtemp(prefix="dia-pgdata-tests-"))
    _PGDATA_HOME.chmod(0o755)
    os.environ["DIA_PGDATA_HOME"] = str(_PGDATA_HOME)
    atexit.register(shutil.rmtree, _PGDATA_HOME, ignore_errors=True)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
# small copies of ../shared/datasets (tests/fixtures/datasets/README.md): Northwind whole, with truth.json
DATASETS = Path(__file__).resolve().parent / "fixtures" / "datasets"
NORTHWIND = DATASETS / "northwind"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Test files marked `heavy` (a minute or more alone) run first: `make test` hands whole
    files to its xdist workers in this order, and a heavy file handed out last would run alone
    while the other workers sit idle. The sort is stable: everything else keeps its order."""
    items.sort(key=lambda item: item.get_closest_marker("heavy") is None)


@pytest.fixture(scope="session")
def example_interpretation():
    from dia_assets.agents.interpreter import interpret

    return interpret(EXAMPLES / "data")


@pytest.fixture(scope="session")
def example_truth() -> dict:
    return json.loads((EXAMPLES / "truth.json").read_text())


@pytest.fixture(autouse=True)
def _fresh_settings() -> None:
    """Each test reads the DIA_* settings anew. get_settings() re-reads by itself when a DIA_*
    variable changed (monkeypatch.setenv); this also drops a cache left by the previous test."""
    from dia_assets.platform.settings import reset_settings

    reset_settings()


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    return ws
