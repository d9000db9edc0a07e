"""`dia` flags mean one thing on every command, and exit codes and errors follow one rule
(docs/cli.md): 0 ok, 1 a failed check or operation, 2 usage; errors are one `error:` line."""

from __future__ import annotations

import json
import os
import re
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dia_assets.cli.app import app
from dia_assets.cli.compat import rewrite
from tests import memory_fixtures
from tests.conftest import EXAMPLES, ROOT
from tests.eval_fixtures import SAMPLE, sample_wh  # noqa: F401 - fixture

db_url = memory_fixtures.db_url
pg_server = memory_fixtures.pg_server

WS, QUIET, JSON, OUT = ["--workspace", "-w"], ["--quiet", "-q"], ["--json"], ["--output", "-o"]
# The flags docs/cli.md documents per command; each must show in that command's --help.
DOCUMENTED: dict[str, list[str]] = {
    "interpret": [*WS, *QUIET, *JSON, *OUT, "--md"],
    "build": [*WS, *QUIET, *JSON, "--warehouse", "--overrides", "--wait"],
    "demo": [*WS, *QUIET, "--data-dir"],
    "ui": [*WS, "--port", "-p", "--host"],
    "status": [*WS, *JSON],
    "ask": [*WS, *QUIET, *JSON, "--warehouse", "--model", "--id"],
    "chart": [*WS, *QUIET, *JSON, *OUT],
    "eval": [*WS, *QUIET, *JSON, *OUT, "--workers", "-j", "--db", "--model"],
    "lineage": [*WS, *JSON, "--question", "--value", "--warehouse"],
    "mcp": [*WS, "--port", "-p", "--host", "--http"],
    "memory import-examples": [*WS, *JSON, "--scope"],
    "memory list": [*WS, *JSON, "--tier", "--kind", "--status"],
    "memory show": [*WS, *JSON],
    "memory search": [*WS, *JSON],
    "memory export": [*WS, *OUT],
    "memory forget": [*WS, *JSON, "--hard", "--auto"],
    "memory maintain": [*WS, *JSON],
    "catalog build": [*WS, *JSON],
    "catalog search": [*WS, *JSON, "--level"],
    "dbt export": [*WS, *QUIET, *JSON, "--warehouse", "--schema"],
    "dbt tasks": [*WS, *QUIET, *JSON, "--name", "--instances", "-n", "--warehouse"],
}


def _run(args: list[str], **env: str):  # noqa: ANN202 - click's Result
    return CliRunner().invoke(app, args, env={"COLUMNS": "250", **env})


def _one_error_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


def test_version_is_the_package_version() -> None:
    result = _run(["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"dia {version('dia')}"


@pytest.mark.parametrize("command", sorted(DOCUMENTED))
def test_help_shows_the_documented_flags(command: str) -> None:
    result = _run([*command.split(), "--help"])
    assert result.exit_code == 0, result.output
    shown = set(re.findall(r"(?<![\w-])(--?[a-z][\w-]*)", result.stdout))
    assert set(DOCUMENTED[command]) <= shown, set(DOCUMENTED[command]) - shown
    assert "-w" not in shown or "--workspace" in shown  # -w is the workspace, nothing else
    assert "-q" not in shown or "--quiet" in shown  # -q is quiet, nothing else


def test_docs_table_lists_every_command_and_the_exit_codes() -> None:
    doc = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for command, flags in DOCUMENTED.items():
        row = next((line for line in doc.splitlines()
                    if re.match(rf"\| `dia {command}[ `]", line)), None)
        assert row is not None, command
        assert all(f"`{flag}`" in row for flag in flags if flag.startswith("--")), (command, row)
    assert all(f"| {code} |" in doc for code in (0, 1, 2))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/cli.md" in readme and "0 ok, 1" in readme


def test_interpret_json_is_the_interpretation_on_stdout(tmp_path: Path) -> None:
    result = _run(["interpret", str(EXAMPLES / "data"), "--json", "-q", "-w", str(tmp_path)])
    assert result.exit_code == 0, result.output
    interp = json.loads(result.stdout)
    assert interp["sources"][0]["name"] == "hospital_departments"
    assert json.loads((tmp_path / "interpretation.json").read_text()) == interp  # the file still written


def test_interpret_old_json_file_form_still_writes_the_file(tmp_path: Path) -> None:
    """The shared key scorer runs `dia interpret {raw} --json {out}`."""
    out = tmp_path / "k" / "interp.json"
    result = _run(["interpret", str(EXAMPLES / "data"), "--json", str(out), "-w", str(tmp_path / "ws")])
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["sources"] and out.with_suffix(".md").exists()
    assert "deprecated" in result.stderr and "-o/--output" in result.stderr


def test_status_and_build_json(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    before = _run(["status", "-w", str(ws), "--json"])
    assert before.exit_code == 1 and json.loads(before.stdout)["verdict"] == "no_build"
    built = _run(["build", str(EXAMPLES / "data"), "-w", str(ws), "-q", "--json",
                  "--overrides", str(EXAMPLES / "data" / "overrides.yaml")])
    report = json.loads(built.stdout)
    assert built.exit_code == (0 if report["accepted"] else 1), built.output
    after = _run(["status", "--workspace", str(ws), "--json"])
    assert json.loads(after.stdout)["report"]["accepted"] == report["accepted"]


def test_eval_json_is_the_summary(sample_wh: Path, tmp_path: Path) -> None:  # noqa: F811
    result = _run(["eval", str(SAMPLE), "--db", str(sample_wh), "--model", "oracle-direct", "--limit", "2",
                   "-o", str(tmp_path / "o"), "--ves-iterations", "0", "-q", "--json", "-j", "1"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["scored"] == 2 and summary == json.loads((tmp_path / "o" / "summary.json").read_text())


def test_memory_not_found_exits_1_on_show_and_forget(db_url: str, tmp_path: Path) -> None:
    env = {"DIA_MEMORY_URL": db_url, "DIA_WORKSPACE": str(tmp_path)}
    listed = _run(["memory", "list", "--json"], **env)
    assert listed.exit_code == 0 and json.loads(listed.stdout) == []
    for args in (["show", "42"], ["forget", "42"], ["forget", "42", "--hard"]):
        result = _run(["memory", *args], **env)
        assert result.exit_code == 1, (args, result.output)
        assert "no memory item #42" in _one_error_line(result.stderr)
    forgot = _run(["memory", "forget", "42", "--json"], **env)
    assert forgot.exit_code == 1 and json.loads(forgot.stdout)["missing"] == [42]


def test_usage_errors_exit_2() -> None:
    assert _run(["status", "--no-such-flag"]).exit_code == 2
    assert _run(["interpret"]).exit_code == 2  # missing DATA_DIR
    result = _run(["interpret", "/no/such/folder"])
    assert result.exit_code == 2 and "is not a folder" in _one_error_line(result.stderr)
    assert _run(["memory", "forget"]).exit_code == 2  # neither ids nor --auto


def test_an_internal_error_is_one_line_and_dia_debug_shows_it(monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path: Path) -> None:
    import dia_assets.agents.schema_creator.state as state

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom\nsecond line")

    monkeypatch.setattr(state, "read_state", broken)
    result = _run(["status", "-w", str(tmp_path)])
    line = _one_error_line(result.stderr)
    assert result.exit_code == 1 and "RuntimeError: boom second line" in line and "DIA_DEBUG=1" in line
    debug = _run(["status", "-w", str(tmp_path)], DIA_DEBUG="1")
    assert isinstance(debug.exception, RuntimeError)  # the traceback is there to see


def test_a_known_error_names_its_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import dia_assets.agents.schema_creator.state as state

    def denied(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(tmp_path / "state"))

    monkeypatch.setattr(state, "read_state", denied)
    result = _run(["status", "-w", str(tmp_path)])
    assert result.exit_code == 1
    assert "check the owner and mode" in _one_error_line(result.stderr)


def test_workspace_flag_is_scoped_to_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIA_WORKSPACE", "elsewhere")
    _run(["status", "-w", str(tmp_path)])
    assert os.environ["DIA_WORKSPACE"] == "elsewhere"


def test_ui_takes_a_port_and_passes_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    import dia_assets.dagster.devserver as devserver

    seen: list[list[str]] = []
    monkeypatch.setattr(devserver, "run", lambda args: seen.append(list(args)) or 0)
    assert _run(["ui", "-p", "3005"]).exit_code == 0
    assert _run(["ui", "--port", "3006", "--host", "0.0.0.0", "--", "--log-level", "debug"]).exit_code == 0
    assert seen == [["-p", "3005"], ["-p", "3006", "-h", "0.0.0.0", "--log-level", "debug"]]


def test_deprecated_spellings_are_rewritten(tmp_path: Path) -> None:
    assert rewrite(["ask", "q?", "-w", "wh.duckdb"])[0] == ["ask", "q?", "--warehouse", "wh.duckdb"]
    assert rewrite(["ask", "q?", "-w", str(tmp_path)]) == (["ask", "q?", "-w", str(tmp_path)], [])  # a workspace
    assert rewrite(["eval", "qs.json", "-w", "8"])[0] == ["eval", "qs.json", "--workers", "8"]
    assert rewrite(["lineage", "-q", "roles"])[0] == ["lineage", "--question", "roles"]
    assert rewrite(["interpret", "raw", "--json", "o.json"])[0] == ["interpret", "raw", "--output", "o.json"]
    assert rewrite(["interpret", "--json", "raw"]) == (["interpret", "--json", "raw"], [])  # the flag
    assert rewrite(["interpret", "raw", "--json"]) == (["interpret", "raw", "--json"], [])
    assert rewrite(["interpret", "--json=o.json", "raw"])[0] == ["interpret", "--output", "o.json", "raw"]
