"""One settings object for every DIA_* variable (issue 30): typed, validated once, a one-line
error naming the variable and what it accepts (CLI exit 2, definitions import), `dia config`
showing each value's source, and no product code reading DIA_* from os.environ itself."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from dia_assets.cli.app import app
from dia_assets.platform.settings import (
    FIELDS,
    Settings,
    SettingsError,
    get_settings,
    load_settings,
    sources,
)

ROOT = Path(__file__).resolve().parent.parent

# one bad value per kind of setting, and the words its error must carry
BAD = [
    ("DIA_SENSOR_INTERVAL_S", "abc", "expected an integer >= 1 (seconds between sensor evaluations)"),
    ("DIA_MODEL_RETRIES", "-1", "expected an integer >= 0"),
    ("DIA_MODEL_TIMEOUT_S", "soon", "expected a number > 0"),
    ("DIA_DRIFT_CHI2_P", "2", "expected a number > 0 and < 1"),
    ("DIA_PRIVACY", "everything", "expected one of schema-only, aggregates, samples"),
    ("DIA_EXECUTOR", "celery", "expected one of in_process, multiprocess"),
    ("DIA_MEMORY_LIMIT", "lots", "expected a memory size such as 2GB"),
    ("DIA_RESULT_BYTES", "huge", "expected a number of bytes or a size such as 1MB"),
    ("DIA_NIGHTLY_CRON", "nightly", "expected a cron expression of 5 fields"),
    ("DIA_DEBUG", "maybe", "expected a boolean"),
]


def _run(args: list[str], **env: str):  # noqa: ANN202 - click's Result
    return CliRunner().invoke(app, args, env={"COLUMNS": "250", **env})


@pytest.mark.parametrize(("var", "value", "expected"), BAD, ids=[b[0] for b in BAD])
def test_a_bad_value_is_one_line_naming_the_variable_and_what_it_accepts(var: str, value: str, expected: str) -> None:
    with pytest.raises(SettingsError) as err:
        load_settings({var: value})
    message = str(err.value)
    assert message.startswith(f"{var}={value}: ") and expected in message and "\n" not in message
    assert err.value.__cause__ is None and err.value.__suppress_context__  # no pydantic dump chained


def test_the_sensor_interval_error_reads_exactly_as_documented() -> None:
    with pytest.raises(SettingsError) as err:
        load_settings({"DIA_SENSOR_INTERVAL_S": "abc"})
    assert str(err.value) == "DIA_SENSOR_INTERVAL_S=abc: expected an integer >= 1 (seconds between sensor evaluations)"


def test_values_are_typed_and_normalised_and_empty_means_default() -> None:
    s = load_settings({"DIA_SENSOR_INTERVAL_S": " 7 ", "DIA_PRIVACY": "Schema_Only", "DIA_EXECUTOR": "MultiProcess",
                       "DIA_RESULT_BYTES": "2MB", "DIA_MODEL_FALLBACKS": "a/1, b/2", "DIA_MODEL": "",
                       "DIA_WORKSPACE": "/tmp/ws", "DIA_DEBUG": "1"})
    assert s.sensor_interval_s == 7 and s.privacy == "schema-only" and s.executor == "multiprocess"
    assert s.result_bytes == 2_000_000 and s.fallbacks == ("a/1", "b/2") and s.model is None
    assert s.workspace == Path("/tmp/ws") and s.debug is True
    d = load_settings({})
    assert (d.sensor_interval_s, d.privacy, d.memory_limit, d.nightly_cron) == (30, "samples", "2GB", "0 2 * * *")


def test_every_setting_has_a_description_and_a_dia_name() -> None:
    assert len(FIELDS) == len(Settings.model_fields) >= 40
    for name, info in Settings.model_fields.items():
        assert info.description, name
    assert {"DIA_SENSOR_INTERVAL_S", "DIA_MODEL", "DIA_WORKSPACE", "DIA_PRIVACY", "DIA_DAGSTER_HOME"} <= set(FIELDS)


def test_read_once_and_again_when_a_dia_variable_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIA_QUERY_THREADS", "3")
    first = get_settings()
    assert first.query_threads == 3 and get_settings() is first  # cached while nothing changed
    monkeypatch.setenv("UNRELATED_VARIABLE", "x")
    assert get_settings() is first
    monkeypatch.setenv("DIA_QUERY_THREADS", "5")
    assert get_settings().query_threads == 5
    monkeypatch.setenv("DIA_QUERY_THREADS", "zero")
    with pytest.raises(SettingsError, match="DIA_QUERY_THREADS=zero"):
        get_settings()


@pytest.mark.parametrize("args", [["config"], ["status", "-w", "{tmp}"]], ids=["config", "status"])
def test_the_cli_refuses_a_bad_value_with_exit_2_and_one_line(args: list[str], tmp_path: Path) -> None:
    result = _run([a.format(tmp=tmp_path) for a in args], DIA_SENSOR_INTERVAL_S="abc")
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and result.stdout == ""
    assert lines == ["error: DIA_SENSOR_INTERVAL_S=abc: expected an integer >= 1 (seconds between sensor evaluations)"]


def test_the_definitions_import_names_the_variable_without_a_pydantic_dump() -> None:
    env = {**os.environ, "DIA_SENSOR_INTERVAL_S": "abc", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", "import dia_assets.definitions"], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last == ("dia_assets.platform.settings.SettingsError: DIA_SENSOR_INTERVAL_S=abc: expected an integer "
                    ">= 1 (seconds between sensor evaluations)")
    assert "ValidationError" not in done.stderr and "pydantic_core" not in done.stderr


def test_dia_config_shows_each_value_and_its_source() -> None:
    result = _run(["config", "--json"], DIA_MODEL="fake/scripted", DIA_QUERY_THREADS="4",
                  DIA_MEMORY_URL="postgresql://dia:s3cret@db.example/dia")
    assert result.exit_code == 0, result.output
    rows = {r["variable"]: r for r in json.loads(result.stdout)["settings"]}
    assert set(rows) == set(FIELDS)
    assert rows["DIA_MODEL"]["value"] == "fake/scripted" and rows["DIA_MODEL"]["source"] == "environment"
    assert rows["DIA_QUERY_THREADS"]["value"] == 4 and rows["DIA_QUERY_THREADS"]["source"] == "environment"
    assert rows["DIA_SENSOR_INTERVAL_S"] == {"variable": "DIA_SENSOR_INTERVAL_S", "value": 30, "source": "default",
                                             "description": "seconds between sensor evaluations"}
    assert rows["DIA_MEMORY_URL"]["value"] == "postgresql://dia:***@db.example/dia"  # no password on screen
    text = _run(["config"], DIA_MODEL="fake/scripted")
    lines = {line.split()[0]: line.split() for line in text.stdout.splitlines()}
    assert text.exit_code == 0 and lines["DIA_MODEL"][1:3] == ["fake/scripted", "environment"]
    assert lines["DIA_SENSOR_INTERVAL_S"][1:3] == ["30", "default"]
    assert lines["DIA_WAREHOUSE"][1:3] == ["(unset)", "default"]


def test_sources_of_a_given_mapping() -> None:
    rows = {r["variable"]: r for r in sources({"DIA_SETTLE_S": "0.5", "DIA_MODEL": "  "})}
    assert rows["DIA_SETTLE_S"]["value"] == 0.5 and rows["DIA_SETTLE_S"]["source"] == "environment"
    assert rows["DIA_MODEL"]["value"] is None and rows["DIA_MODEL"]["source"] == "default"  # blank = unset


# Reads of DIA_* that stay outside the settings object, each with its reason.
ALLOWED = {
    # save and restore of DIA_WORKSPACE around a command that `-w` changed: not a setting read
    ("dia_assets/cli/errors.py", "os.environ.get"),
}


def _environ_reads(path: Path) -> list[tuple[int, str, str]]:
    """(line, call, key source) of every os.environ / os.getenv read in a module."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        key: ast.AST | None = None
        call = ""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            target = ast.unparse(node.func)
            if target in ("os.environ.get", "os.getenv", "environ.get", "os.environ.setdefault") \
                    and node.args:
                key, call = node.args[0], target
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) \
                and ast.unparse(node.value) in ("os.environ", "environ"):
            key, call = node.slice, "os.environ[]"
        if key is not None:
            found.append((node.lineno, call, ast.unparse(key)))
    return found


def test_no_product_code_reads_dia_variables_from_the_environment() -> None:
    """Every DIA_* read goes through get_settings(); a key that is not a literal (a helper taking
    the variable's name) counts too, unless it is plainly not a DIA_ name."""
    offenders = []
    for folder in ("dia_assets", "resources", "sensors"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel == "dia_assets/platform/settings.py":
                continue
            for line, call, key in _environ_reads(path):
                literal = key.strip("'\"")
                if (key[0] in "'\"" and not literal.startswith("DIA_")) or "_API_BASE" in key or "_BASE_URL" in key:
                    continue  # LITELLM_*, DAGSTER_HOME, a provider's own base URL
                if (rel, call) in ALLOWED:
                    continue
                offenders.append(f"{rel}:{line}: {call}({key})")
    assert offenders == [], "read these through dia_assets.platform.settings.get_settings():\n" + "\n".join(offenders)


def test_the_scan_catches_a_direct_read(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('import os\nx = os.environ.get("DIA_MODEL")\ny = os.environ["DIA_WORKSPACE"]\nz = os.getenv(NAME)\n')
    assert [(c, k) for _, c, k in _environ_reads(bad)] == [
        ("os.environ.get", "'DIA_MODEL'"), ("os.environ[]", "'DIA_WORKSPACE'"), ("os.getenv", "NAME")]


def _no_dagster_home(monkeypatch: pytest.MonkeyPatch) -> None:
    """DAGSTER_HOME unset now and restored after the test (the code under test sets it)."""
    monkeypatch.setenv("DAGSTER_HOME", "")
    monkeypatch.delenv("DAGSTER_HOME")


def test_demo_keeps_a_persistent_instance_in_the_workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without DAGSTER_HOME, `dia demo` runs against <workspace>/.dagster (the Makefile's
    dagster.yaml), not an ephemeral instance: the runs are there for `dia ui` afterwards."""
    from dagster import DagsterRunStatus

    from dia_assets.cli.demo import _instance
    from dia_assets.dagster.instance import DAGSTER_YAML

    _no_dagster_home(monkeypatch)
    ws = tmp_path / "ws"
    instance = _instance(ws)
    home = ws.absolute() / ".dagster"
    assert not instance.is_ephemeral and Path(instance.root_directory) == home
    assert (home / "dagster.yaml").read_text() == DAGSTER_YAML and os.environ["DAGSTER_HOME"] == str(home)
    from dagster import DagsterInstance, job, op

    @op
    def one() -> int:
        return 1

    @job
    def tiny() -> None:
        one()

    assert tiny.execute_in_process(instance=instance).success
    instance.dispose()
    again = DagsterInstance.from_config(str(home))  # a later session over the same folder
    assert [r.status for r in again.get_runs()] == [DagsterRunStatus.SUCCESS]
    again.dispose()


def test_the_instance_folder_setting_and_dagster_home_win(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dia_assets.dagster.instance import dagster_home, use_persistent_instance

    _no_dagster_home(monkeypatch)
    monkeypatch.setenv("DIA_DAGSTER_HOME", str(tmp_path / "mine"))
    assert use_persistent_instance(tmp_path / "ws") == tmp_path / "mine"
    assert (tmp_path / "mine" / "dagster.yaml").exists() and not (tmp_path / "ws").exists()
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "make"))
    assert dagster_home(tmp_path / "ws") == (tmp_path / "make", "DAGSTER_HOME")
    assert use_persistent_instance(tmp_path / "ws") == tmp_path / "make"
    assert not (tmp_path / "make").exists()  # the operator's folder is used as it is, not written


def test_dia_ui_hands_the_persistent_instance_to_dagster_dev(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import dia_assets.dagster.devserver as devserver

    seen: dict[str, str | None] = {}

    def fake_run(args: list[str]) -> int:  # the child inherits this environment
        seen.update(home=os.environ.get("DAGSTER_HOME"), ws=os.environ.get("DIA_WORKSPACE"))
        return 0

    _no_dagster_home(monkeypatch)
    monkeypatch.setattr(devserver, "run", fake_run)
    result = _run(["ui", "-w", str(tmp_path / "ws")])
    assert result.exit_code == 0, result.output
    assert seen == {"home": str((tmp_path / "ws" / ".dagster").absolute()), "ws": str(tmp_path / "ws")}
    assert f"Dagster instance: {tmp_path / 'ws' / '.dagster'}" in result.stderr


def test_the_settings_table_in_the_docs_is_the_generated_one() -> None:
    from dia_assets.platform.settings import settings_table

    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    shown = text.split("<!-- settings-table:start -->\n", 1)[1].split("<!-- settings-table:end -->", 1)[0]
    assert shown == settings_table(), "paste settings_table() into docs/cli.md"
    assert shown.count("\n| `DIA_") == len(FIELDS)
