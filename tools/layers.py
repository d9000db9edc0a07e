"""The module import graph of DIA and the layer rule it should follow (design review 2026-12-02, §6).

Layers, lowest first; a module may import its own layer or a lower one, never a higher one:

    0 contracts   dia_assets/contracts              typed artifacts
    1 platform    dia_assets/platform, prompts      shared infrastructure (no agents, no Dagster)
    2 agents      dia_assets/agents                 framework-free logic; each agent is a leaf
    3 glue        dia_assets/*.py, dagster/, cli/,  Dagster assets, resources, sensors, CLI
                  resources/, sensors/
    4 bench       bench/                            benchmarks (may import anything but tests)

Reported, each as one stable line so a test can keep a list of today's known ones:
- `cycle: a <-> b <-> ...`          a strongly connected set of modules (sorted), imports inside
                                      functions included (they still tie the modules together);
- `up: a -> b (agents -> glue)`     an import from a lower layer into a higher one;
- `sibling: a -> b (x -> y)`         an agent importing a sibling agent's module (`agents.query.loop`):
                                      a sibling is used only through its package (the modules directly
                                      under dia_assets/agents/ are shared, not an agent);
  `sibling: a -> b (x -> y, not in COMPOSES)`  through the package, but along no declared edge;
  `sibling: a -> b.n (x -> y, not exported)`   a name the package's `__all__` does not export
                                      (a leading underscore is never exported);
  `sibling: COMPOSES cycle: x <-> y`  the declared edges themselves form a cycle.
- `tests: a -> b`                   code outside tests/ importing from tests.

The rule for agents: an agent may import a sibling agent ONLY (a) through the sibling's package,
`from dia_assets.agents.<x> import Name` with Name in that `__init__.py`'s `__all__` (exported
lazily, PEP 562, so the package import stays cheap), and (b) along an edge declared in COMPOSES
below, which must be acyclic. Shared infrastructure is no edge: it lives in dia_assets/platform/
(the memory store, file readers, table statistics and `Target`), and composing two agents in
sequence (interpret, then build) is glue (dia_assets/pipeline.py).

    python tools/layers.py            # every violation, one per line; exit 1 if any
    python tools/layers.py --counts   # modules, import edges, and the number of each kind (exit 0)
    python tools/layers.py --json     # the violations as a JSON list
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "dia_assets"
# top-level folders that install as dia_assets.<name> (setup.py, [tool.setuptools.package-dir])
MOUNTED = ("resources", "sensors")
SCANNED = (PACKAGE, *MOUNTED, "bench")
LAYERS = ("contracts", "platform", "agents", "glue", "bench")
KINDS = ("cycle", "up", "sibling", "tests")

# Which sibling agents each agent composes (design review §6.2: agents are leaves, except that one
# agent may build on another through its public package). One table, checked to be acyclic; each
# edge says why it is legitimate.
COMPOSES: dict[str, frozenset[str]] = {
    # extends the query agent (its loop, tools, schema index, answers); semantic steps in a
    # pipeline; the catalog's selectivity estimates plan them
    "analysis": frozenset({"query", "semantic_ops", "catalog"}),
    # clusters labels with the semantic operators' kmeans; their judge names the clusters
    "catalog": frozenset({"semantic_ops"}),
    # scores the query agent; never the reverse
    "evaluation": frozenset({"query"}),
    # serves the query agent's answers and the lineage agent's index over MCP; a workspace
    # without schema/lineage.json gets the column lineage the schema creator derives
    "mcp": frozenset({"query", "lineage", "schema_creator"}),
    # an answered question gets a chart; charts know nothing of the query agent
    "query": frozenset({"charts"}),
}


def module_name(path: Path, root: Path = ROOT) -> str:
    """The dotted name the code imports `path` by (mounted folders under the package)."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    if parts[0] in MOUNTED:
        parts.insert(0, PACKAGE)
    return ".".join(parts)


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the scanned folders (and tests/, to recognise its names), by name."""
    out: dict[str, Path] = {}
    for top in (*SCANNED, "tests"):
        for path in sorted((root / top).rglob("*.py")):
            if "__pycache__" not in path.parts:
                out[module_name(path, root)] = path
    return out


def layer(module: str) -> str | None:
    """The layer of a module, or None for tests (outside the layer rule)."""
    parts = module.split(".")
    if parts[0] == "tests":
        return None
    if parts[0] == "bench":
        return "bench"
    sub = parts[1] if len(parts) > 1 else ""
    if sub == "contracts":
        return "contracts"
    if sub in ("platform", "prompts"):
        return "platform"
    if sub == "agents":
        return "agents"
    return "glue"


def agent(module: str, root: Path = ROOT) -> str | None:
    """The agent a module belongs to (the package `dia_assets.agents.<agent>` and everything in
    it), None for the shared modules directly under dia_assets/agents/ (settings, locations…)."""
    parts = module.split(".")
    if parts[:2] == [PACKAGE, "agents"] and len(parts) > 2 and (root / PACKAGE / "agents" / parts[2]).is_dir():
        return parts[2]
    return None


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _from_target(module: str, path: Path, node: ast.ImportFrom) -> str:
    """The absolute module a `from ... import` statement names (relative ones resolved)."""
    if not node.level:
        return node.module or ""
    base = _package_of(module, path).split(".")
    base = base[: len(base) - node.level + 1]
    return ".".join(base + ([node.module] if node.module else []))


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The scanned or test modules `module` imports, anywhere in its file (lazy imports too).
    `from x import y` counts as an import of x.y when that is a module, else of x."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: set[str] = set()

    def add(name: str) -> None:
        # the longest known prefix: `import dia_assets.agents.query.loop` imports that module
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name and name != module:
            found.add(name)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(module, path, node)
            for alias in node.names:
                full = f"{target}.{alias.name}"
                add(full if full in known else target)
    return found


def graph(root: Path = ROOT) -> dict[str, set[str]]:
    """module -> the modules it imports, for every scanned and test module."""
    known = modules(root)
    return {name: imports(name, path, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected sets of two or more modules (Tarjan, iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    group = []
                    while True:
                        member = stack.pop()
                        on.discard(member)
                        group.append(member)
                        if member == node:
                            break
                    if len(group) > 1:
                        out.append(sorted(group))
    return sorted(out)


def _short(module: str) -> str:
    return module.removeprefix(f"{PACKAGE}.")


def exported(package: Path) -> set[str]:
    """The names a package's `__init__.py` lists in a literal `__all__` (none without one)."""
    init = package / "__init__.py"
    if not init.exists():
        return set()
    for node in ast.parse(init.read_text(encoding="utf-8"), filename=str(init)).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
            try:
                return {str(name) for name in ast.literal_eval(node.value)}
            except ValueError:  # computed: not checkable, so every imported name is reported
                return set()
    return set()


def imported_names(module: str, path: Path, package: str) -> set[str]:
    """The names `module` takes from `package` with `from package import name` (relative too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and _from_target(module, path, node) == package:
            names.update(alias.name for alias in node.names)
    return names


def composes_cycles(composes: dict[str, frozenset[str]]) -> list[list[str]]:
    """Cycles among the declared agent edges (a self-edge counts)."""
    groups = cycles({a: set(b) for a, b in composes.items()})
    return groups + [[a] for a in sorted(composes) if a in composes[a]]


def _sibling(src: str, dst: str, mine: str, theirs: str, composes: dict[str, frozenset[str]],
             known: dict[str, Path], root: Path) -> list[str]:
    """The agent rule for one import of a sibling agent: through its package, along a declared
    edge, of exported public names only."""
    line = f"sibling: {_short(src)} -> {_short(dst)} ({mine} -> {theirs}"
    package = f"{PACKAGE}.agents.{theirs}"
    if dst != package:
        return [line + ")"]
    if theirs not in composes.get(mine, frozenset()):
        return [line + ", not in COMPOSES)"]
    public = exported(root / PACKAGE / "agents" / theirs)
    return [f"sibling: {_short(src)} -> {_short(dst)}.{name} ({mine} -> {theirs}, not exported)"
            for name in sorted(imported_names(src, known[src], package))
            if name != "*" and f"{package}.{name}" not in known  # a module: reported above
            and (name.startswith("_") or name not in public)]


def violations(edges: dict[str, set[str]], root: Path = ROOT,
               composes: dict[str, frozenset[str]] | None = None) -> list[str]:
    """Every violation of the layer rule, one stable line each, sorted by kind then text.
    `composes` is the declared agent edges (default COMPOSES)."""
    composes = COMPOSES if composes is None else composes
    known = modules(root)
    out: dict[str, list[str]] = {kind: [] for kind in KINDS}
    scanned = {m: e for m, e in edges.items() if layer(m) is not None}
    for group in cycles(scanned):
        out["cycle"].append("cycle: " + " <-> ".join(_short(m) for m in group))
    for group in composes_cycles(composes):
        out["sibling"].append("sibling: COMPOSES cycle: " + " <-> ".join(group))
    for src in sorted(scanned):
        for dst in sorted(scanned[src]):
            if layer(dst) is None:
                out["tests"].append(f"tests: {_short(src)} -> {dst}")
                continue
            a, b = layer(src), layer(dst)
            if LAYERS.index(b) > LAYERS.index(a):
                out["up"].append(f"up: {_short(src)} -> {_short(dst)} ({a} -> {b})")
            mine, theirs = agent(src, root), agent(dst, root)
            if mine and theirs and mine != theirs:
                out["sibling"] += _sibling(src, dst, mine, theirs, composes, known, root)
    return [line for kind in KINDS for line in sorted(out[kind])]


def counts(edges: dict[str, set[str]], found: Iterable[str]) -> dict[str, int]:
    """Modules and import edges of the scanned code, and the number of violations of each kind."""
    scanned = {m: e for m, e in edges.items() if layer(m) is not None}
    found = list(found)
    out = {"modules": len(scanned), "import_edges": sum(len(e) for e in scanned.values())}
    out.update({kind: sum(1 for line in found if line.startswith(f"{kind}:")) for kind in KINDS})
    out["cycle_modules"] = sum(line.count(" <-> ") + 1 for line in found if line.startswith("cycle:"))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--counts", action="store_true", help="print the numbers only")
    parser.add_argument("--json", action="store_true", help="print the violations as a JSON list")
    args = parser.parse_args(argv)
    edges = graph()
    found = violations(edges)
    if args.counts:
        for key, value in counts(edges, found).items():
            print(f"{key}: {value}")
        return 0  # a report; the plain listing is the check
    if args.json:
        print(json.dumps(found, indent=1))
    else:
        print("\n".join(found) if found else "no violations")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
