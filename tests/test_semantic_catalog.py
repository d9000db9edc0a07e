"""The semantic catalog: the label tree built from the example interpretation, stored in
the embedded PostgreSQL + pgvector memory, and searched by dense and sparse retrieval."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from dia_assets.agents.catalog.build import build_catalog, humanize
from dia_assets.agents.catalog.estimate import estimate_filter
from dia_assets.agents.catalog.store import CatalogStore
from dia_assets.agents.schema_creator.plan import plan_manifest
from dia_assets.contracts.semantic_catalog import SemanticCatalog
from dia_assets.platform.embeddings import WordLlamaEmbedder
from dia_assets.platform.memory.store import MemoryStore
from tests.memory_fixtures import db_url, pg_server  # noqa: F401


@pytest.fixture(scope="module")
def embedder() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


@pytest.fixture
def built(example_interpretation, embedder):
    manifest = plan_manifest(example_interpretation)
    return manifest, *build_catalog(example_interpretation, manifest, embedder, scope="db-test")


@pytest.fixture
def wstore(db_url, embedder) -> Iterator[MemoryStore]:  # noqa: F811
    with MemoryStore.open(url=db_url, embedder=embedder) as s:
        yield s


def test_tree_covers_every_table_and_column(built) -> None:
    manifest, catalog, vectors = built
    counts = catalog.counts()
    assert counts["entity"] == len(manifest.tables)
    assert counts["attribute"] == sum(len(t.columns) for t in manifest.tables)
    assert counts["domain"] >= 1 and len(vectors) == len(catalog.nodes)
    by_id = catalog.by_id()
    for node in catalog.nodes:
        if node.level != "domain":
            assert node.parent in by_id  # attributes hang under entities, entities under domains
    for table in manifest.tables:
        for fk in table.foreign_keys:
            node = by_id[f"attribute:{table.name}.{fk.columns[0]}"]
            assert f"attribute:{fk.ref_table}.{fk.ref_columns[0]}" in node.related
    assert SemanticCatalog.model_validate_json(catalog.to_json()).version == 1
    assert humanize("OvertimeHours") == "overtime hours"


def test_store_and_search_dense_and_sparse(built, wstore) -> None:
    manifest, catalog, vectors = built
    store = CatalogStore(wstore)
    assert store.replace(catalog, vectors) == len(catalog.nodes)
    assert store.replace(catalog, vectors) == len(catalog.nodes)  # a refresh replaces, never duplicates
    assert len(store.nodes("db-test")) == len(catalog.nodes)
    column = manifest.tables[0].columns[1]
    hits = store.search(humanize(column.name), scope="db-test", k=5)
    assert hits and hits[0].node.column == column.name
    assert hits[0].sparse_rank == 1 or hits[0].dense_rank == 1
    assert hits[0].path.count(" > ") == 2  # domain > entity > attribute
    entity_hits = store.search(humanize(manifest.tables[0].name), scope="db-test", level="entity", k=3)
    assert all(h.node.level == "entity" for h in entity_hits)
    assert store.search("anything", scope="other-scope") == []


def test_selectivity_estimate_uses_catalog_samples(built, embedder) -> None:
    manifest, catalog, _ = built
    nodes = catalog.by_id()
    table = manifest.tables[0]
    col = next(c for c in table.columns if nodes[f"attribute:{table.name}.{c.name}"].examples)
    est = estimate_filter(nodes, table.name, col.name, "anything at all", embedder)
    assert 0.05 <= est.selectivity <= 0.95 and "catalog samples" in est.basis
    none = estimate_filter(nodes, table.name, "no_such_column", "x", embedder)
    assert none.selectivity == 0.5 and none.basis.startswith("no catalog samples")


def _workspace(tmp_path, example_interpretation):  # noqa: ANN001, ANN202
    ws = tmp_path / "ws"
    example_interpretation.write(ws / "interpretation.json")
    plan_manifest(example_interpretation).write(ws / "schema" / "manifest.json")
    return ws


def test_asset_materializes_and_cli_searches(tmp_path, example_interpretation, db_url, monkeypatch) -> None:  # noqa: F811
    import dagster as dg
    from dagster_duckdb import DuckDBResource
    from typer.testing import CliRunner

    from dia_assets.cli.catalog import catalog_app
    from dia_assets.dagster.catalog import semantic_catalog
    from dia_assets.dagster.resources.embeddings import EmbeddingsResource
    from dia_assets.dagster.resources.memory import MemoryResource
    from dia_assets.dagster.resources.workspace import WorkspaceResource

    ws = _workspace(tmp_path, example_interpretation)
    embeddings = EmbeddingsResource(model="wordllama")
    result = dg.materialize([semantic_catalog], resources={
        "memory": MemoryResource(embeddings=embeddings, url=db_url), "embeddings": embeddings,
        "workspace": WorkspaceResource(root=str(ws)),
        "duckdb": DuckDBResource(database=str(ws / "warehouse.duckdb"))})
    assert result.success
    meta = result.asset_materializations_for_node("semantic_catalog")[0].metadata
    assert meta["tables"].value == len(plan_manifest(example_interpretation).tables)
    assert "**" in meta["tree"].value and (ws / "catalog" / "semantic_catalog.json").exists()
    monkeypatch.setenv("DIA_MEMORY_URL", db_url)
    monkeypatch.setenv("DIA_WORKSPACE", str(ws))
    out = CliRunner().invoke(catalog_app, ["search", "overtime hours", "-k", "3", "--json"])
    assert out.exit_code == 0, out.output
    hits = json.loads(out.output)  # one JSON array on stdout
    assert len(hits) == 3 and any("overtime" in (h["column"] or "") for h in hits)
    bad = CliRunner().invoke(catalog_app, ["search", "x", "--level", "nope"])
    assert bad.exit_code == 2 and "--level" in bad.output


def test_catalog_linker_returns_tables_of_matching_labels(built, wstore) -> None:
    from dia_assets.agents.catalog.linking import catalog_linker

    manifest, catalog, vectors = built
    CatalogStore(wstore).replace(catalog, vectors)
    owner = next(t.name for t in manifest.tables if any(c.name == "overtime_hours" for c in t.columns))
    tables = catalog_linker(wstore, "db-test", k=3)("how many overtime hours were paid?")
    assert tables and tables[0] == owner and len(tables) == len(set(tables))


def test_query_agent_adds_catalog_tables_to_schema_linking(tmp_path) -> None:
    from dia_assets.agents.query import answer_question
    from dia_assets.platform.model.litellm import litellm_chat
    from tests.query_fixtures import FAKE_MODEL, build_example_warehouse, call, register_tools

    wh = build_example_warehouse(tmp_path / "warehouse.duckdb")
    register_tools([call("ask", question="stop")])
    from dia_assets.agents.query import AgentSettings

    _, run = answer_question("zzz unrelated words", wh, chat=litellm_chat(FAKE_MODEL),
                             settings=AgentSettings(link_tables=1, link_budget_tokens=None, reflect=False),
                             catalog_link=lambda q: ["payroll", "no_such_table"])
    events = {e["event"]: e for e in run.trace["events"]}
    assert events["catalog_link"]["tables"] == ["payroll"] and events["catalog_link"]["added"] == ["payroll"]
    assert events["start"]["linked_tables"][-1] == "payroll"  # lexical linking alone did not pick it
    register_tools([call("ask", question="stop")])

    def broken(q: str) -> list[str]:
        raise RuntimeError("store down")
    _, run = answer_question("zzz", wh, chat=litellm_chat(FAKE_MODEL), catalog_link=broken)
    assert any(e["event"] == "catalog_unavailable" for e in run.trace["events"])
