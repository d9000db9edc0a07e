"""The project works with Dagster's `dg` CLI ([tool.dg] in pyproject.toml): `dg list defs`
loads the code location and lists our assets, sensors and schedules; `dia ui` runs `dg dev`
and falls back to `dagster dev -w workspace.yaml` only without dagster-dg-cli."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from dia_assets.dagster import devserver
from tests.conftest import ROOT

DG = Path(sys.executable).with_name("dg")


@pytest.mark.skipif(not DG.exists(), reason="dagster-dg-cli is not installed in this environment")
def test_dg_list_defs_loads_the_code_location(tmp_path: Path) -> None:
    env = {**os.environ, "DIA_WORKSPACE": str(tmp_path), "PYTHONPATH": str(ROOT),
           "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run([str(DG), "list", "defs", "--json"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    defs = json.loads(out.stdout)
    assets = {a["asset_key"] for a in defs["assets"]}
    assert {"raw_files", "interpretation", "schema_manifest", "warehouse", "validation_report",
            "semantic_catalog", "query_result"} <= assets
    assert "dia_automation" in {s["name"] for s in defs["sensors"]}
    assert {s["name"] for s in defs["schedules"]} == {"nightly_refresh", "weekly_memory_consolidation"}
    assert "warehouse:key_validity" in {c["key"] for c in defs["asset_checks"]}


def test_dia_ui_runs_dg_dev_and_falls_back_to_dagster_dev(monkeypatch, capsys) -> None:  # noqa: ANN001
    monkeypatch.setattr(devserver, "_tool", lambda name: f"/bin/{name}")
    assert devserver.dev_command(["-p", "3005"]) == ["/bin/dg", "dev", "-p", "3005"]
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(devserver, "_tool", lambda name: None if name == "dg" else f"/bin/{name}")
    assert devserver.dev_command(["-p", "3005"]) == ["/bin/dagster", "dev", "-w", "workspace.yaml", "-p", "3005"]
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "dg (dagster-dg-cli) is not installed" in err
