"""`dia doctor`: one cheap call to the configured model through the door; a failure is one line
on stderr that names the fix, exit 1. The scripted model and a refused loopback port: no network."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest
from typer.testing import CliRunner

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
from dia_assets.cli.app import app  # noqa: E402
from dia_assets.platform.model.litellm import reset_door  # noqa: E402
from tests.fake_llm import register  # noqa: E402

PROVIDER_VARS = ("DIA_MODEL", "DIA_SEMANTIC_LIGHT_MODEL", "DIA_SEMANTIC_STRONG_MODEL", "DIA_MODEL_FALLBACKS",
                 "OPENAI_API_BASE", "OPENAI_BASE_URL", "OPENAI_API_KEY", "ANTHROPIC_API_KEY")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in PROVIDER_VARS:
        monkeypatch.delenv(name, raising=False)
    reset_door(None)
    yield
    reset_door(None)


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["doctor", *args])
    return result.exit_code, result.stdout, result.stderr


def test_doctor_ok_with_the_scripted_model(monkeypatch: pytest.MonkeyPatch) -> None:
    handler = register(["ok"])
    monkeypatch.setenv("DIA_MODEL", "fake/scripted")
    code, out, err = run()
    assert code == 0, err
    assert "DIA_MODEL=fake/scripted: ok (answered 'ok')" in out
    assert len(handler.calls) == 1  # one cheap call


def test_doctor_names_the_refused_endpoint_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    s.close()
    monkeypatch.setenv("DIA_MODEL", "openai/gpt-4o-mini")
    monkeypatch.setenv("OPENAI_API_BASE", base)
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")
    code, out, err = run()
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert base in lines[0] and "Connection refused" in lines[0] and "OPENAI_API_BASE" in lines[0]


def test_doctor_names_the_missing_key_without_calling(monkeypatch: pytest.MonkeyPatch) -> None:
    handler = register(["never"])
    monkeypatch.setenv("DIA_MODEL", "anthropic/claude-sonnet-4-5")
    code, _, err = run()
    assert code == 1 and "no API key: set ANTHROPIC_API_KEY" in err and len(err.strip().splitlines()) == 1
    assert handler.calls == []


def test_doctor_explains_an_unknown_provider() -> None:
    code, _, err = run("--model", "nosuchprovider/some-model")
    assert code == 1 and "does not know the provider of 'nosuchprovider/some-model'" in err
    assert "provider_list" in err


def test_doctor_without_a_model_says_how_to_set_one() -> None:
    code, _, err = run()
    assert code == 1 and "DIA_MODEL" in err


def test_doctor_checks_fallbacks_too(monkeypatch: pytest.MonkeyPatch) -> None:
    register(["ok", "ok"])
    monkeypatch.setenv("DIA_MODEL", "fake/scripted")
    monkeypatch.setenv("DIA_MODEL_FALLBACKS", "fake/backup")
    code, out, _ = run()
    assert code == 0 and "DIA_MODEL_FALLBACKS=fake/backup: ok" in out
