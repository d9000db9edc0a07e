"""Prove that DIA's dependencies install from wheels on every Python version it claims.

The machine runs one Python; pip can still resolve for another one without having it:
`pip install --dry-run --ignore-installed --only-binary=:all: --python-version 3.13 ...`
picks wheels whose tags fit that version (on this platform) and fails when a dependency
has none, as pgserver 0.1.4 did on 3.13. The versions are the `Programming Language ::
Python :: 3.x` classifiers of pyproject.toml, the same list the README states.

Usage: python3 .ci/resolve_versions.py [--extra dev] [pip index options...]
Exit 0 when every version resolves, 1 otherwise (pip's own reason printed per version).
"""

from __future__ import annotations

import json
import re
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


def pip_command(version: str, reqs: list[str], target: Path, report: Path,
                index_args: list[str] = ()) -> list[str]:
    """The pip call that resolves `reqs` for CPython `version` from wheels only."""
    return [
        sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed",
        "--only-binary=:all:", "--python-version", version, "--target", str(target),
        "--report", str(report), "--quiet", "--disable-pip-version-check",
        *index_args, *reqs,
    ]


@dataclass
class Outcome:
    version: str
    ok: bool
    packages: dict[str, str]  # resolved name -> version
    error: str


def resolve(version: str, reqs: list[str], index_args: list[str] = (),
            env: dict[str, str] | None = None) -> Outcome:
    """Resolve `reqs` for one Python version; nothing is installed."""
    with tempfile.TemporaryDirectory(prefix="dia-resolve-") as tmp:
        report = Path(tmp) / "report.json"
        run = subprocess.run(
            pip_command(version, reqs, Path(tmp) / "target", report, index_args),
            capture_output=True, text=True, env=env,
        )
        if run.returncode != 0 or not report.exists():
            errors = [ln for ln in run.stderr.splitlines() if ln.startswith("ERROR")]
            return Outcome(version, False, {}, "\n".join(errors) or run.stderr[-2000:])
        installs = json.loads(report.read_text()).get("install", [])
        packages = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in installs}
        return Outcome(version, True, packages, "")


def main(argv: list[str]) -> int:
    extras: list[str] = []
    while argv[:1] == ["--extra"]:
        extras.append(argv[1])
        argv = argv[2:]
    proj = project()
    versions, reqs = python_versions(proj), requirements(proj, extras)
    if not versions:
        print("pyproject.toml claims no Python version (classifiers)", file=sys.stderr)
        return 1
    failed = []
    # pip mostly waits on downloads (wheels, where the index serves no separate metadata):
    # the versions resolve side by side
    with ThreadPoolExecutor(max_workers=len(versions)) as pool:
        outcomes = list(pool.map(lambda v: resolve(v, reqs, argv), versions))
    for version, out in zip(versions, outcomes, strict=True):
        if out.ok:
            print(f"Python {version}: {len(out.packages)} packages resolve from wheels")
        else:
            failed.append(version)
            print(f"Python {version}: does NOT resolve\n{out.error}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
