"""platform/workspace: the DESIGN §4 tree as code, and no module joins the tree's names itself."""

from __future__ import annotations

import ast
from pathlib import Path

from dia_assets.platform.workspace import QueryFiles, Workspace
from tests.conftest import ROOT


def test_the_tree_of_design_section_4(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    rel = {name: getattr(ws, name).relative_to(tmp_path).as_posix() for name in (
        "interpretation", "interpretation_md", "overrides", "manifest", "ddl", "load", "er", "report",
        "report_md", "warehouse", "installed_manifest", "schema_lineage", "drift_review", "pgdata")}
    assert rel == {
        "interpretation": "interpretation.json", "interpretation_md": "interpretation.md",
        "overrides": "review/interpretation_overrides.yaml",
        "manifest": "schema/manifest.json", "ddl": "schema/ddl.sql", "load": "schema/load.sql", "er": "schema/er.mmd",
        "report": "validation/report.json", "report_md": "validation/report.md", "warehouse": "warehouse.duckdb",
        "installed_manifest": "schema/installed_manifest.json", "schema_lineage": "schema/lineage.json",
        "drift_review": "review/drift_review.md", "pgdata": "pgdata",
    }
    q = ws.query("q1")
    assert [p.relative_to(tmp_path).as_posix() for p in (q.sql, q.result, q.parquet, q.trace, q.answer)] == [
        "queries/q1/query.sql", "queries/q1/result.json", "queries/q1/result.parquet", "queries/q1/trace.json",
        "queries/q1/answer.md"]
    assert Workspace(str(tmp_path)) == ws and ws.root == tmp_path  # a str root is a Path
    assert not any(tmp_path.iterdir())  # naming a path creates nothing


def test_create_makes_parent_folders_only_when_asked(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, create=True)
    ws.report_md.write_text("x", encoding="utf-8")  # validation/ was made
    assert ws.query("q2").folder.is_dir()
    assert ws.drift_dir.is_dir()
    assert not (tmp_path / "schema").exists()  # nothing else


def test_saved_answers_in_question_order(tmp_path: Path) -> None:
    ws = Workspace(tmp_path, create=True)
    for qid in ("b", "a", "c"):
        ws.query(qid).result.write_text("{}", encoding="utf-8")
    ws.query("no_answer")  # a folder without result.json is no answer
    assert [p.parent.name for p in ws.saved_answers()] == ["a", "b", "c"]
    assert QueryFiles(ws.queries_dir / "a") == ws.query("a")


def test_the_workspace_resource_uses_the_tree(tmp_path: Path) -> None:
    from dia_assets.dagster.resources.workspace import WorkspaceResource

    res = WorkspaceResource(root=str(tmp_path), data_dir=str(tmp_path))
    assert res.tree.manifest == res.path("schema", "manifest.json") == res.files.manifest
    assert (tmp_path / "schema").is_dir()  # tree, like path(), makes the parent a step writes into


# the tree's own names: a module that joins one of these onto a path repeats the layout
_NAMES = {"schema", "validation", "queries", "review", "interpretation.json", "interpretation.md", "manifest.json",
          "installed_manifest.json", "ddl.sql", "load.sql", "er.mmd", "report.json", "report.md", "query.sql",
          "result.json", "result.parquet", "trace.json", "answer.md", "warehouse.duckdb", "lessons.md",
          "interpretation_overrides.yaml", "lineage.json", "chart.json", "analysis.json"}


def _joins(tree: ast.AST) -> list[tuple[int, str]]:
    """`x / "name"`, `x.joinpath("name")` and `("name", ...)` tuples of tree names (not type subscripts)."""
    found = []
    types = {id(n.slice) for n in ast.walk(tree) if isinstance(n, ast.Subscript)}  # Literal["schema", ...]
    for node in ast.walk(tree):
        if id(node) in types:
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            parts = [node.right]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("joinpath", "path"):
            parts = list(node.args)
        elif isinstance(node, ast.Tuple):
            parts = list(node.elts)
        else:
            continue
        found += [(node.lineno, p.value) for p in parts
                  if isinstance(p, ast.Constant) and isinstance(p.value, str) and p.value in _NAMES]
    return found


# an evaluation run writes its own report.md into its output folder, which is not the workspace
_OTHER_FOLDERS = {("dia_assets/agents/evaluation/report.py", "report.md"), ("dia_assets/agents/evaluation/runner.py", "report.md"),
                  ("dia_assets/cli/eval.py", "report.md")}


def test_no_module_joins_the_tree_itself() -> None:
    own = ROOT / "dia_assets" / "platform" / "workspace.py"
    files = [p for folder in ("dia_assets", "resources", "sensors", "bench") for p in (ROOT / folder).rglob("*.py")]
    bad = [f"{p.relative_to(ROOT)}:{line}: {name!r}" for p in files if p != own
           for line, name in _joins(ast.parse(p.read_text(encoding="utf-8")))
           if (p.relative_to(ROOT).as_posix(), name) not in _OTHER_FOLDERS]
    assert not bad, "use dia_assets.platform.workspace.Workspace instead of joining its names:\n" + "\n".join(bad)


def test_the_guard_finds_a_join() -> None:
    code = 'a = ws / "schema" / "manifest.json"\nb = ws.joinpath("validation", "x")\nc = ("review", "y")\nd = "schema"\n'
    assert sorted(_joins(ast.parse(code))) == [(1, "manifest.json"), (1, "schema"), (2, "validation"), (3, "review")]
