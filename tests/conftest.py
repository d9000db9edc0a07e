"""Shared fixtures: offline, deterministic, no real model."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.pop("DIA_MODEL", None)

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NORTHWIND = ROOT.parent / "shared" / "datasets" / "northwind"


@pytest.fixture(scope="session")
def example_interpretation():
    from dia_assets.agents.interpreter import interpret

    return interpret(EXAMPLES / "data")


@pytest.fixture(scope="session")
def example_truth() -> dict:
    return json.loads((EXAMPLES / "truth.json").read_text())


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    ws = tmp_path / "ws"
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    return ws
