"""`dia` through typer's runner, as a user types it."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from dia_assets.cli.app import app
from tests.conftest import EXAMPLES

runner = CliRunner()


def test_help_lists_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0 and "interpret" in result.output and "demo" in result.output


def test_interpret_writes_json_and_markdown(tmp_path):
    out = tmp_path / "out" / "interp.json"
    result = runner.invoke(app, ["interpret", str(EXAMPLES / "data"), "--json", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "6 sources, 14,396 rows" in result.output
    assert "payroll.badge -> staff.badge" in result.output
    assert json.loads(out.read_text())["sources"][0]["name"] == "hospital_departments"
    assert out.with_suffix(".md").exists()


def test_interpret_missing_folder_is_a_clear_error(tmp_path):
    result = runner.invoke(app, ["interpret", str(tmp_path / "missing")])
    assert result.exit_code == 2 and "is not a folder" in result.output
