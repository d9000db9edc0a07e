"""The layer rule as a test (design review 2026-12-02, §6; tools/layers.py computes it).

contracts < platform < agents < glue (Dagster assets, resources, sensors, CLI) < bench: a module
imports its own layer or lower ones; an agent imports a sibling agent only through the sibling's
package (names in its `__all__`) and only along an edge declared in `layers.COMPOSES`, which is
acyclic; nothing outside tests/ imports tests; no import cycles. KNOWN lists today's violations. A new one fails the test, and so
does a KNOWN entry that no longer happens: delete it, so the list only shrinks.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("dia_tools_layers", ROOT / "tools" / "layers.py")
layers = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = layers
_spec.loader.exec_module(layers)

KNOWN: set[str] = set()  # none left (issue 32); a new violation fails the test


@pytest.fixture(scope="module")
def found() -> list[str]:
    return layers.violations(layers.graph())


def test_no_new_layer_violations(found: list[str]) -> None:
    new = sorted(set(found) - KNOWN)
    assert not new, "new import(s) against the layer rule (fix the import, do not add to KNOWN):\n" + "\n".join(new)


def test_known_violations_are_not_stale(found: list[str]) -> None:
    gone = sorted(KNOWN - set(found))
    assert not gone, "these no longer happen: delete them from KNOWN so the list only shrinks:\n" + "\n".join(gone)


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_each_kind_of_violation_is_found_in_a_small_tree(tmp_path: Path) -> None:
    """The checker is not vacuous: one violation of each kind, through relative, `from x
    import module` and function-level imports, and the allowed directions stay quiet."""
    root = _write(tmp_path, {
        "dia_assets/__init__.py": "",
        "dia_assets/assets.py": "from dia_assets.agents.query import loop\n",
        "dia_assets/contracts/__init__.py": "",
        "dia_assets/contracts/answer.py": "def f():\n    from dia_assets.agents.query.loop import run\n",
        "dia_assets/agents/__init__.py": "",
        "dia_assets/platform/settings.py": "x = 1\n",
        "dia_assets/agents/query/__init__.py": "",
        "dia_assets/agents/query/loop.py": "from . import tools\nfrom ..settings import x\nrun = 1\n",
        "dia_assets/agents/query/tools.py": "import dia_assets.agents.query.loop\n",
        "dia_assets/agents/memory/__init__.py": "",
        "dia_assets/agents/memory/store.py": "from dia_assets.agents.query.tools import t\n",
        "resources/__init__.py": "",
        "dia_assets/dagster/resources/llm.py": "from dia_assets.agents.memory import store\n",
        "sensors/__init__.py": "",
        "sensors/drift.py": "from dia_assets.dagster.resources.llm import x\n",
        "bench/run.py": "from tests.fixtures import scripted\nfrom dia_assets import assets\n",
        "tests/__init__.py": "",
        "tests/fixtures.py": "from dia_assets.agents.query import loop\n",
    })
    got = layers.violations(layers.graph(root), root)
    assert got == [
        "cycle: agents.query.loop <-> agents.query.tools",
        "up: contracts.answer -> agents.query.loop (contracts -> agents)",
        "sibling: agents.memory.store -> agents.query.tools (memory -> query)",
        "tests: bench.run -> tests.fixtures",
    ]
    assert layers.counts(layers.graph(root), got)["sibling"] == 1


def test_counts_are_printed(capsys: pytest.CaptureFixture[str], found: list[str]) -> None:
    assert layers.main(["--counts"]) == 0
    lines = dict(line.split(": ") for line in capsys.readouterr().out.splitlines())
    assert int(lines["sibling"]) == sum(1 for v in found if v.startswith("sibling:"))
    assert int(lines["modules"]) > 200 and set(layers.KINDS) <= set(lines)


_AGENTS = {
    "dia_assets/__init__.py": "",
    "dia_assets/agents/__init__.py": "",
    "dia_assets/agents/query/__init__.py": "__all__ = ['QueryAgent']\n",
    "dia_assets/agents/query/loop.py": "class QueryAgent: ...\nclass _State: ...\n",
    "dia_assets/agents/charts/__init__.py": "__all__ = ['chart']\n",
    "dia_assets/agents/charts/render.py": "def chart(): ...\n",
}


@pytest.mark.parametrize(("files", "composes", "expected"), [
    pytest.param(  # a module of a declared sibling: only its package is public
        {"dia_assets/agents/analysis/run.py": "from dia_assets.agents.query.loop import QueryAgent\n"},
        {"analysis": frozenset({"query"})},
        ["sibling: agents.analysis.run -> agents.query.loop (analysis -> query)"], id="module"),
    pytest.param(  # `from package import module` is still the module
        {"dia_assets/agents/analysis/run.py": "from ..query import QueryAgent, loop\n"},
        {"analysis": frozenset({"query"})},
        ["sibling: agents.analysis.run -> agents.query.loop (analysis -> query)"], id="relative-module"),
    pytest.param(  # through the package, but no declared edge
        {"dia_assets/agents/analysis/run.py": "from dia_assets.agents.query import QueryAgent\n"},
        {"analysis": frozenset({"charts"})},
        ["sibling: agents.analysis.run -> agents.query (analysis -> query, not in COMPOSES)"], id="undeclared"),
    pytest.param(  # a name the package does not export, and a private one
        {"dia_assets/agents/analysis/run.py": "def f():\n    from dia_assets.agents.query import _State, loop_x\n",
         "dia_assets/agents/query/__init__.py": "__all__ = ['QueryAgent', '_State']\n"},
        {"analysis": frozenset({"query"})},
        ["sibling: agents.analysis.run -> agents.query._State (analysis -> query, not exported)",
         "sibling: agents.analysis.run -> agents.query.loop_x (analysis -> query, not exported)"], id="not-exported"),
    pytest.param(  # declared edges that form a cycle are themselves a violation
        {"dia_assets/agents/query/loop.py": "from dia_assets.agents.charts import chart\n",
         "dia_assets/agents/charts/render.py": "import dia_assets.agents.query\n"},
        {"query": frozenset({"charts"}), "charts": frozenset({"query"})},
        ["sibling: COMPOSES cycle: charts <-> query"], id="declared-cycle"),
    pytest.param(  # the allowed form stays quiet
        {"dia_assets/agents/analysis/run.py": "from dia_assets.agents.query import QueryAgent\n"
                                              "import dia_assets.agents.charts\n"},
        {"analysis": frozenset({"query", "charts"})},
        [], id="allowed"),
])
def test_agents_use_siblings_only_through_declared_packages(
        tmp_path: Path, files: dict[str, str], composes: dict[str, frozenset[str]], expected: list[str]) -> None:
    root = _write(tmp_path, {**_AGENTS, **files})
    assert layers.violations(layers.graph(root), root, composes) == expected


def test_the_declared_agent_edges_are_acyclic_and_name_agents() -> None:
    assert layers.composes_cycles(layers.COMPOSES) == []
    agents = {p.name for p in (ROOT / "dia_assets" / "agents").iterdir() if (p / "__init__.py").exists()}
    named = set(layers.COMPOSES) | {b for bs in layers.COMPOSES.values() for b in bs}
    assert named <= agents, sorted(named - agents)


# the packages siblings import: importing one loads none of its modules (PEP 562 exports)
PUBLIC = ("query", "semantic_ops", "charts", "catalog", "lineage", "schema_creator")


def test_agent_packages_export_lazily_and_every_export_resolves() -> None:
    """What a sibling may import (`__all__`) exists and is public, and importing the package
    loads neither its modules nor litellm or numpy (the code location's import time)."""
    code = (
        "import importlib, json, sys\n"
        f"pkgs = {PUBLIC!r}\n"
        "mods = [importlib.import_module('dia_assets.agents.' + p) for p in pkgs]\n"
        "loaded = sorted(m for m in sys.modules if any(m.startswith(f'dia_assets.agents.{p}.') for p in pkgs)"
        " or m in ('litellm', 'numpy'))\n"
        "missing = [f'{m.__name__}.{n}' for m in mods for n in m.__all__ if getattr(m, n, None) is None]\n"
        "print(json.dumps({'loaded': loaded, 'missing': missing, 'all': [sorted(m.__all__) for m in mods]}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    got = json.loads(out.stdout)
    assert got["loaded"] == []
    assert got["missing"] == []
    for pkg, names in zip(PUBLIC, got["all"], strict=True):
        assert names, f"{pkg} exports nothing"
        assert not [n for n in names if n.startswith("_")], pkg
        assert set(names) == layers.exported(ROOT / "dia_assets" / "agents" / pkg)
