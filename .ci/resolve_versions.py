"""Prove that DIA's dependencies install from wheels on every Python version it claims.

The machine runs one Python; pip can still resolve for another one without having it:
`pip install --dry-run --ignore-installed --only-binary=:all: --python-version 3.13 ...`
picks wheels whose tags fit that version (on this platform) and fails when a dependency
has none, as pgserver 0.1.4 did on 3.13. The versions are the `Programming Language ::
Python :: 3.x` classifiers of pyproject.toml, the same list the README states.

The same resolution writes the lock: `--write constraints.txt` pins every package it picked
(`make lock`), with a python_version marker where the versions disagree; `--lock
constraints.txt` resolves under those pins (CI) and fails when a package is left unpinned.

Usage: python3 .ci/resolve_versions.py [--extra dev] [--write FILE | --lock FILE] [pip index options...]
Exit 0 when every version resolves, 1 otherwise (the resolver's reason printed per version).
uv makes the same resolution in seconds; pip makes it where uv is not installed.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_CLASSIFIER = re.compile(r"^Programming Language :: Python :: (3\.\d+)$")


def project(pyproject: Path = ROOT / "pyproject.toml") -> dict:
    """The [project] table of a pyproject.toml."""
    return tomllib.loads(pyproject.read_text())["project"]


def python_versions(proj: dict) -> list[str]:
    """The minor versions claimed by the classifiers, oldest first."""
    found = {m.group(1) for c in proj.get("classifiers", []) if (m := _CLASSIFIER.match(c))}
    return sorted(found, key=lambda v: tuple(int(p) for p in v.split(".")))


def requirements(proj: dict, extras: list[str] = ()) -> list[str]:
    """The runtime dependencies plus those of the named extras."""
    reqs = list(proj.get("dependencies", []))
    optional = proj.get("optional-dependencies", {})
    for extra in extras:
        if extra not in optional:
            raise KeyError(f"pyproject.toml has no extra {extra!r} (has {sorted(optional)})")
        reqs += optional[extra]
    return reqs


def uv_binary() -> str | None:
    """uv beside this interpreter (`make install` puts it there), else on the PATH."""
    beside = Path(sys.executable).parent / "uv"
    return str(beside) if beside.exists() else shutil.which("uv")


def pip_command(version: str, reqs: list[str], target: Path, report: Path,
                index_args: list[str] = ()) -> list[str]:
    """The pip call that resolves `reqs` for CPython `version` from wheels only."""
    return [
        sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
        "--only-binary=:all:", "--python-version", version, "--target", str(target),
        "--report", str(report), "--quiet", "--disable-pip-version-check",
        *index_args, *reqs,
    ]


def uv_command(uv: str, version: str, requirements_file: Path, output: Path,
               index_args: list[str] = ()) -> list[str]:
    """The same resolution by uv: this platform, CPython `version`, wheels only (a few seconds
    where pip takes a CPU-minute per version); pip's index options mean the same to uv."""
    # --python: this interpreter, so uv does not look for (or download) a CPython `version`
    return [
        uv, "pip", "compile", "--quiet", "--no-header", "--no-annotate", "--only-binary", ":all:",
        "--python", sys.executable, "--no-python-downloads", "--python-version", version,
        "--output-file", str(output), *index_args, str(requirements_file),
    ]


@dataclass
class Outcome:
    version: str
    ok: bool
    packages: dict[str, str]  # resolved name -> version
    error: str


def resolve(version: str, reqs: list[str], index_args: list[str] = (),
            env: dict[str, str] | None = None, uv: str | None = None) -> Outcome:
    """Resolve `reqs` for one Python version; nothing is installed. By uv when given, else pip."""
    with tempfile.TemporaryDirectory(prefix="dia-resolve-") as tmp:
        out = Path(tmp) / ("pins.txt" if uv else "report.json")
        if uv:
            listed = Path(tmp) / "requirements.txt"
            listed.write_text("\n".join(reqs) + "\n")
            cmd = uv_command(uv, version, listed, out, index_args)
        else:
            cmd = pip_command(version, reqs, Path(tmp) / "target", out, index_args)
        run = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if run.returncode != 0 or not out.exists():
            errors = [ln for ln in run.stderr.splitlines() if ln.startswith(("ERROR", "error", "  "))]
            return Outcome(version, False, {}, "\n".join(errors) or run.stderr[-2000:])
        if uv:
            pins = (ln.split(" ;")[0].split("==") for ln in out.read_text().splitlines()
                    if "==" in ln and not ln.startswith(("#", "-")))
            return Outcome(version, True, {name.strip().lower(): v.strip() for name, v in pins}, "")
        installs = json.loads(out.read_text()).get("install", [])
        packages = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in installs}
        return Outcome(version, True, packages, "")


LOCK_HEADER = (
    "# Generated by `make lock` (.ci/resolve_versions.py --write): every package the dependencies\n"
    "# and the [dev] extra resolve to from wheels, for each Python version pyproject claims.\n"
    "# `make install` and CI install with `-c constraints.txt`; CI checks it with --lock.\n"
)


def canonical(name: str) -> str:
    """A distribution name as pip compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def lock_text(outcomes: list[Outcome]) -> str:
    """constraints.txt from the resolutions of every version: one pin per package, or one pin
    per Python version (with a marker) for a package that resolved differently or not at all."""
    lines = []
    for name in sorted({canonical(n) for o in outcomes for n in o.packages}):
        found = {o.version: {canonical(k): v for k, v in o.packages.items()}.get(name) for o in outcomes}
        versions = set(found.values())
        if len(versions) == 1 and None not in versions:
            lines.append(f"{name}=={versions.pop()}")
        else:
            lines += [f'{name}=={v} ; python_version == "{py}"' for py, v in found.items() if v]
    return LOCK_HEADER + "\n".join(lines) + "\n"


def pinned_names(text: str) -> set[str]:
    """The packages a constraints file pins."""
    lines = (ln.split("#", 1)[0].strip() for ln in text.splitlines())
    return {canonical(re.split(r"[<>=!~ ;\[]", ln, maxsplit=1)[0]) for ln in lines if ln}


def main(argv: list[str]) -> int:
    extras: list[str] = []
    write = lock = None
    while argv[:1] in (["--extra"], ["--write"], ["--lock"]):
        flag, value, argv = argv[0], argv[1], argv[2:]
        if flag == "--extra":
            extras.append(value)
        elif flag == "--write":
            write = Path(value)
        else:
            lock = Path(value).resolve()
            argv = ["-c", str(lock), *argv]
    proj = project()
    versions, reqs = python_versions(proj), requirements(proj, extras)
    if not versions:
        print("pyproject.toml claims no Python version (classifiers)", file=sys.stderr)
        return 1
    failed = []
    # pip mostly waits on downloads (wheels, where the index serves no separate metadata):
    # the versions resolve side by side
    uv = uv_binary()
    with ThreadPoolExecutor(max_workers=len(versions)) as pool:
        outcomes = list(pool.map(lambda v: resolve(v, reqs, argv, uv=uv), versions))
    pins = pinned_names(lock.read_text()) if lock else set()
    for version, out in zip(versions, outcomes, strict=True):
        loose = sorted(n for n in map(canonical, out.packages) if n not in pins) if lock else []
        if out.ok and not loose:
            print(f"Python {version}: {len(out.packages)} packages resolve from wheels")
        elif out.ok:
            failed.append(version)
            print(f"Python {version}: not pinned in {lock.name}: {', '.join(loose)} (run make lock)",
                  file=sys.stderr)
        else:
            failed.append(version)
            print(f"Python {version}: does NOT resolve\n{out.error}", file=sys.stderr)
    if write and not failed:
        write.write_text(lock_text(outcomes))
        print(f"wrote {write}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
