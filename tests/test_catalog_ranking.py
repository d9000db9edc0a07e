"""Catalog search ranks columns by what they hold (issue 29): on a warehouse the Schema
Creator built, a plain question finds the descriptive column before an identifier with a
similar name, a question about identifiers still finds the identifier, and the pieces of the
score behave as documented."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dia_assets.agents.catalog.column_text import is_identifier, sample_values, split_glued
from dia_assets.agents.catalog.ranking import asks_for_identifier, content_words, expected_types
from dia_assets.agents.catalog.refresh import refresh_catalog
from dia_assets.agents.catalog.store import CatalogStore
from dia_assets.agents.evaluation.retrieval import mean_reciprocal_rank, reciprocal_rank
from dia_assets.agents.memory.embedder import WordLlamaEmbedder
from dia_assets.agents.memory.store import MemoryStore
from tests.memory_fixtures import db_url, pg_server  # noqa: F401

ARTISTS = [(1, "Nina Vale", "Ireland"), (2, "The Lanterns", "Canada"), (3, "Okra Bloom", "Ghana"),
           (4, "Mira Sol", "Chile"), (5, "Paper Birds", "Japan"), (6, "Stone Harbour", "Norway")]
TITLES = ["Northern Lights", "Quiet Rivers", "Blue Hour", "Salt and Smoke", "Paper Moon", "Long Way Home",
          "Glass Garden", "Morning Static", "Harbour Songs", "Wild Orchard", "Slow Fire", "Open Sky"]


def _raw(folder: Path) -> Path:
    folder.mkdir(parents=True)
    (folder / "artists.csv").write_text("artist_id,artist_name,country\n" + "".join(
        f"{i},{n},{c}\n" for i, n, c in ARTISTS))
    (folder / "albums.csv").write_text("album_id,artist_id,album_title,release_year,list_price\n" + "".join(
        f"{100 + i},{i % 6 + 1},{t},{1990 + 2 * i},{9.99 + i}\n" for i, t in enumerate(TITLES)))
    return folder


@pytest.fixture(scope="module")
def embedder() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


@pytest.fixture
def searched(tmp_path, db_url, embedder) -> Iterator[tuple[CatalogStore, str]]:  # noqa: F811
    from dia_assets.agents.schema_creator.build import run

    ws, warehouse = tmp_path / "ws", tmp_path / "music.duckdb"
    run(_raw(tmp_path / "raw"), ws, warehouse=str(warehouse))
    with MemoryStore.open(url=db_url, embedder=embedder) as store:
        catalog = refresh_catalog(ws, str(warehouse), store)
        by_id = catalog.by_id()
        assert by_id["attribute:albums.album_id"].identifier
        assert not by_id["attribute:albums.album_title"].identifier
        yield CatalogStore(store), catalog.scope


def _columns(store: CatalogStore, question: str, scope: str) -> list[str]:
    return [f"{h.node.table}.{h.node.column}" for h in store.search(question, scope=scope, k=20)
            if h.node.level == "attribute"]


def test_plain_question_ranks_descriptive_column_over_similar_id(searched) -> None:
    store, scope = searched
    ranked = _columns(store, "What is each album called?", scope)
    assert ranked[0] == "albums.album_title", ranked[:5]
    assert ranked.index("albums.album_id") > 0
    assert _columns(store, "How much does an album cost?", scope)[0] == "albums.list_price"
    hit = store.search("What is each album called?", scope=scope, k=20)
    album_id = next(h for h in hit if h.node.id == "attribute:albums.album_id")
    assert album_id.terms is not None and album_id.terms.prior < 0  # the identifier prior, reported
    assert {"dense", "align", "sparse", "answer", "prior"} <= set(album_id.as_dict())


def test_identifier_question_still_finds_the_id(searched) -> None:
    store, scope = searched
    ranked = _columns(store, "What is the album id?", scope)
    assert ranked[0] in ("albums.album_id",), ranked[:5]
    hit = next(h for h in store.search("What is the album id?", scope=scope, k=20)
               if h.node.id == "attribute:albums.album_id")
    assert hit.terms is not None and hit.terms.prior == 0  # no penalty when ids are asked for


def test_reciprocal_rank_on_a_known_ranking() -> None:
    ranked = ["t.a", "t.b", "T.C", "t.d", "t.e", "t.f"]
    assert reciprocal_rank(ranked, ["t.a"]) == 1.0
    assert reciprocal_rank(ranked, ["t.c", "t.b"]) == 0.5  # the first acceptable one counts
    assert reciprocal_rank(ranked, ["t.c"]) == pytest.approx(1 / 3)  # case-insensitive
    assert reciprocal_rank(ranked, ["t.f"]) == 0.0  # rank 6 is past @5
    assert reciprocal_rank(ranked, ["t.f"], k=6) == pytest.approx(1 / 6)
    assert reciprocal_rank([], ["t.a"]) == 0.0
    assert mean_reciprocal_rank([(ranked, ["t.a"]), (ranked, ["t.d"]), (ranked, ["x"])]) == pytest.approx(
        (1 + 0.25 + 0) / 3)
    assert mean_reciprocal_rank([]) == 0.0


def test_score_pieces() -> None:
    vocab = frozenset({"total", "price", "supply", "cost", "count", "discount"})
    assert split_glued("totalprice", vocab) == ("total", "price")
    assert split_glued("supplycost", vocab) == ("supply", "cost")
    assert split_glued("discount", vocab) == ("discount",)  # a known word stays whole
    assert split_glued("acctbal", vocab) == ("acctbal",)  # cannot be spelled from known words
    assert is_identifier("customer_id", "customer_id", "id", True, ["1", "2"])
    assert is_identifier("c_custkey", "custkey", "integer", True, ["1"])
    assert is_identifier("reports_to", "reports_to", "integer", True, ["1002", "1056"])  # a key of numbers
    assert not is_identifier("product_line", "product_line", "categorical", True, ["Classic Cars"])
    assert not is_identifier("postal_code", "postal_code", "postal_code", False, ["10115"])
    assert not is_identifier("last_name", "last_name", "id", False, ["King"])
    assert sample_values(["12", "Action", None, "Action", "a very long title of many words"]) == [
        "Action", "a very long title"]
    assert asks_for_identifier("What is the customer number?")
    assert not asks_for_identifier("What is the number of customers?")
    assert not asks_for_identifier("How much does each employee earn?")
    assert expected_types("When did the order ship?") >= {"date", "timestamp"}
    assert "decimal" in expected_types("How much does it cost?") and not expected_types("Which genres exist?")
    assert content_words("How much does each employee earn?") == "employee earn"
