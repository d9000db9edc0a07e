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


def test_interpret_without_a_model_loads_neither_dagster_nor_litellm(tmp_path):
    """Each takes seconds to import (NOTES.md); `dia interpret` needs them only to call a model."""
    import os
    import subprocess
    import sys

    script = ("import sys\nfrom dia_assets.cli.app import app\n"
              f"sys.argv = ['dia', 'interpret', {str(EXAMPLES / 'data')!r}, '-q', '-w', {str(tmp_path / 'ws')!r}]\n"
              "try:\n    app()\nexcept SystemExit as e:\n    assert not e.code, e.code\n"
              "print(sorted(m for m in ('dagster', 'litellm') if m in sys.modules))\n")
    env = {k: v for k, v in os.environ.items() if k != "DIA_MODEL"}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"
