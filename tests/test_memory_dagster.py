"""The `memory_lessons` asset through `dagster.materialize`, the resources, and `dia memory`."""

import json
from pathlib import Path

import dagster as dg
from typer.testing import CliRunner

from dia_assets.cli.memory import memory_app
from dia_assets.dagster.memory import memory_lessons
from dia_assets.dagster.resources.embeddings import EmbeddingsResource
from dia_assets.dagster.resources.memory import MemoryResource
from dia_assets.dagster.resources.workspace import WorkspaceResource
from dia_assets.platform.memory import Kind, MemoryStore, NewMemory, Status, Tier
from tests import memory_fixtures

# pytest fixtures, shared through the module namespace
db_url = memory_fixtures.db_url
pg_server = memory_fixtures.pg_server

PROBE = "SELECT count(*) > count(DISTINCT cds_code) FROM scores"


def _lesson(scope: str, **kw: object) -> NewMemory:
    fields = {
        "kind": Kind.AGGREGATION,
        "title": "Count entities through a fan-out join with COUNT(DISTINCT pk)",
        "body": "Count schools through the scores join with COUNT(DISTINCT cds_code), not COUNT(*).",
        "probe_sql": PROBE,
        "scope": scope,
        **kw,
    }
    return NewMemory.model_validate(fields)


def test_memory_lessons_materializes_with_counts_and_changes(db_url: str, tmp_path: Path) -> None:
    embeddings = EmbeddingsResource(model="wordllama")
    memory = MemoryResource(embeddings=embeddings, url=db_url)
    seed = memory.store()
    seed.insert(_lesson("db-a"))
    seed.insert(_lesson("db-b", evidence=["also on db-b"]))
    seed.insert(_lesson("db-a", body="An unimportant note.", probe_sql="SELECT 1", importance=0.05))
    seed.import_examples(
        [NewMemory(tier=Tier.EXAMPLE, kind=Kind.FILTER, title="q", question="q?", body="SELECT 1")]
    )

    result = dg.materialize(
        [memory_lessons],
        resources={
            "memory": memory,
            "embeddings": embeddings,
            "workspace": WorkspaceResource(root=str(tmp_path)),
        },
    )
    assert result.success
    meta = result.asset_materializations_for_node("memory_lessons")[0].metadata
    assert (meta["merged"].value, meta["promoted"].value, meta["archived"].value) == (1, 1, 1)
    assert meta["counts_json"].value == {
        "cross_session": {"aggregation": 1},
        "example": {"filter": 1},
    }
    assert "| cross_session | 1 | 0 | 1 |" in meta["counts"].value
    assert "promoted #1" in meta["changes"].value
    lessons = Path(meta["lessons_path"].value)
    assert (
        lessons == tmp_path / "memory" / "lessons.md"
        and "Cross-session lessons (1)" in lessons.read_text()
    )

    again = dg.materialize(
        [memory_lessons],
        resources={
            "memory": memory,
            "embeddings": embeddings,
            "workspace": WorkspaceResource(root=str(tmp_path)),
        },
    )
    meta = again.asset_materializations_for_node("memory_lessons")[0].metadata
    assert meta["changes"].value == "No changes."  # a second pass finds nothing to do


def test_embeddings_resource_is_wordllama_by_default(monkeypatch: object) -> None:
    resource = EmbeddingsResource()
    vectors = resource.embed(["one question", "another question"])
    assert vectors.shape == (2, 256) and resource.get_embedder().name == "wordllama/l2_supercat_256"


def test_cli_import_list_show_search_export_forget(db_url: str, tmp_path: Path) -> None:
    env = {"DIA_MEMORY_URL": db_url, "DIA_WORKSPACE": str(tmp_path)}
    runner = CliRunner()
    examples = tmp_path / "examples.jsonl"
    examples.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "question": "How many schools are in Alameda?",
                    "sql": "SELECT count(*) FROM schools WHERE county = 'Alameda'",
                    "notes": {"schools.county": "county name"},
                },
                {
                    "question": "Average score per county",
                    "sql": "SELECT county, avg(score) FROM s JOIN t USING (id) GROUP BY 1",
                },
            ]
        )
    )
    out = runner.invoke(memory_app, ["import-examples", str(examples)], env=env)
    assert out.exit_code == 0, out.output
    assert "inserted 2" in out.output
    assert (
        "duplicates 2"
        in runner.invoke(memory_app, ["import-examples", str(examples)], env=env).output
    )

    listed = runner.invoke(memory_app, ["list", "--tier", "example", "--json"], env=env)
    items = json.loads(listed.output)
    assert [i["kind"] for i in items] == ["aggregation", "join"]
    assert "How many schools" in runner.invoke(memory_app, ["list"], env=env).output

    shown = runner.invoke(memory_app, ["show", str(items[0]["id"])], env=env)
    assert "note schools.county: county name" in shown.output and "SELECT count(*)" in shown.output
    assert runner.invoke(memory_app, ["show", "999"], env=env).exit_code == 1

    found = json.loads(
        runner.invoke(
            memory_app, ["search", "schools in Alameda county", "--k", "1", "--json"], env=env
        ).output
    )
    assert found[0]["id"] == items[0]["id"] and "body" not in found[0]

    store = MemoryStore.open(url=db_url)
    lesson_id = store.insert(_lesson("db-a")).id
    store.close()
    exported = runner.invoke(memory_app, ["export"], env=env)
    assert exported.exit_code == 0 and (tmp_path / "memory" / "lessons.md").exists()

    assert "archived 1: #" in runner.invoke(memory_app, ["forget", str(lesson_id)], env=env).output
    archived = json.loads(
        runner.invoke(memory_app, ["list", "--status", "archived", "--json"], env=env).output
    )
    assert [i["id"] for i in archived] == [lesson_id] and archived[0][
        "status"
    ] == Status.ARCHIVED.value
    assert (
        "deleted 1"
        in runner.invoke(memory_app, ["forget", str(lesson_id), "--hard"], env=env).output
    )
    assert runner.invoke(memory_app, ["forget"], env=env).exit_code == 2  # usage: no ids, no --auto
    assert runner.invoke(memory_app, ["forget", "--auto"], env=env).exit_code == 0
    assert runner.invoke(memory_app, ["maintain"], env=env).exit_code == 0


def test_cli_reports_an_unreachable_store_without_the_password(tmp_path: Path) -> None:
    env = {
        "DIA_MEMORY_URL": "postgresql://dia:hunter22@127.0.0.1:9/memory",
        "DIA_WORKSPACE": str(tmp_path),
    }
    out = CliRunner().invoke(memory_app, ["list"], env=env)
    assert out.exit_code == 1 and "DIA_MEMORY_URL" in out.output  # a failed operation naming the fix
    assert "127.0.0.1:9" in out.output and "hunter22" not in out.output


def test_counts_table_is_well_formed_markdown_even_when_empty() -> None:
    from dia_assets.dagster.memory import _counts_table

    for counts in ({}, {"session": {"hint": 2, "pitfall": 1}}):
        lines = _counts_table(counts).splitlines()
        cells = {line.count("|") for line in lines}
        assert len(cells) == 1, lines  # header, separator and rows have the same number of cells
        assert set(lines[1].replace("|", "").split()) <= {"---", "---:"}
    assert "| session | 2 | 1 | 3 |" in _counts_table({"session": {"hint": 2, "pitfall": 1}})
