"""The layer rule as a test (design review 2026-12-02, §6; tools/layers.py computes it).

contracts < platform < agents < glue (Dagster assets, resources, sensors, CLI) < bench: a module
imports its own layer or lower ones; an agent imports no sibling agent; nothing outside tests/
imports tests; no import cycles. KNOWN lists today's violations. A new one fails the test, and so
does a KNOWN entry that no longer happens: delete it, so the list only shrinks.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

_spec = importlib.util.spec_from_file_location("dia_tools_layers", ROOT / "tools" / "layers.py")
layers = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = layers
_spec.loader.exec_module(layers)

KNOWN = {
    "cycle: analysis_assets <-> query_assets",
    "sibling: agents.analysis.agent -> agents.query.loop (analysis -> query)",
    "sibling: agents.analysis.agent -> agents.query.memory (analysis -> query)",
    "sibling: agents.analysis.agent -> agents.query.schema (analysis -> query)",
    "sibling: agents.analysis.agent -> agents.query.tools (analysis -> query)",
    "sibling: agents.analysis.agent -> agents.semantic_ops.judge (analysis -> semantic_ops)",
    "sibling: agents.analysis.agent -> agents.semantic_ops.models (analysis -> semantic_ops)",
    "sibling: agents.analysis.auto -> agents.query.loop (analysis -> query)",
    "sibling: agents.analysis.auto -> agents.query.run (analysis -> query)",
    "sibling: agents.analysis.auto -> agents.semantic_ops.models (analysis -> semantic_ops)",
    "sibling: agents.analysis.auto -> agents.semantic_ops.vectors (analysis -> semantic_ops)",
    "sibling: agents.analysis.run -> agents.query.loop (analysis -> query)",
    "sibling: agents.analysis.run -> agents.query.memory (analysis -> query)",
    "sibling: agents.analysis.run -> agents.query.run (analysis -> query)",
    "sibling: agents.analysis.run -> agents.query.schema (analysis -> query)",
    "sibling: agents.analysis.run -> agents.semantic_ops.models (analysis -> semantic_ops)",
    "sibling: agents.analysis.run -> agents.semantic_ops.vectors (analysis -> semantic_ops)",
    "sibling: agents.analysis.session -> agents.catalog.estimate (analysis -> catalog)",
    "sibling: agents.analysis.session -> agents.query.schema (analysis -> query)",
    "sibling: agents.analysis.session -> agents.semantic_ops.models (analysis -> semantic_ops)",
    "sibling: agents.analysis.session -> agents.semantic_ops.operators (analysis -> semantic_ops)",
    "sibling: agents.analysis.session -> agents.semantic_ops.tables (analysis -> semantic_ops)",
    "sibling: agents.analysis.session -> agents.semantic_ops.vectors (analysis -> semantic_ops)",
    "sibling: agents.catalog.build -> agents.semantic_ops.operators (catalog -> semantic_ops)",
    "sibling: agents.catalog.refresh -> agents.semantic_ops.judge (catalog -> semantic_ops)",
    "sibling: agents.charts.stored -> agents.query.run (charts -> query)",
    "sibling: agents.evaluation.solvers -> agents.query.loop (evaluation -> query)",
    "sibling: agents.evaluation.solvers -> agents.query.run (evaluation -> query)",
    "sibling: agents.evaluation.solvers -> agents.query.verify (evaluation -> query)",
    "sibling: agents.mcp.lineage -> agents.lineage.index (mcp -> lineage)",
    "sibling: agents.mcp.lineage -> agents.schema_creator.lineage (mcp -> schema_creator)",
    "sibling: agents.mcp.service -> agents.lineage.index (mcp -> lineage)",
    "sibling: agents.mcp.service -> agents.query.loop (mcp -> query)",
    "sibling: agents.mcp.service -> agents.query.memory (mcp -> query)",
    "sibling: agents.mcp.service -> agents.query.run (mcp -> query)",
    "sibling: agents.mcp.service -> agents.query.tools (mcp -> query)",
    "sibling: agents.query.run -> agents.charts.choose (query -> charts)",
    "sibling: agents.query.run -> agents.charts.hints (query -> charts)",
    "sibling: agents.query.run -> agents.charts.render (query -> charts)",
}


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
        "resources/llm.py": "from dia_assets.agents.memory import store\n",
        "sensors/__init__.py": "",
        "sensors/drift.py": "from dia_assets.resources.llm import x\n",
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
