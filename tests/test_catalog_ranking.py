"""Catalog search ranks columns by what they hold (issue 29): on a warehouse the Schema
Creator built, a plain question finds the descriptive column before an identifier with a
similar name, a question about identifiers still finds the identifier, and the pieces of the
score behave as documented."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dia_assets.agents.catalog import store as catalog_store
from dia_assets.agents.catalog.column_text import (
    is_identifier,
    name_words,
    sample_values,
    split_glued,
)
from dia_assets.agents.catalog.lexicon import LINK, SYNONYM, abbreviations, lexicon
from dia_assets.agents.catalog.ranking import (
    alignment,
    asks_for_identifier,
    content_words,
    expected_types,
    lexical_links,
    rarity,
    weighted_mean,
)
from dia_assets.agents.catalog.refresh import refresh_catalog
from dia_assets.agents.catalog.store import CatalogStore
from dia_assets.agents.evaluation.retrieval import mean_reciprocal_rank, reciprocal_rank
from dia_assets.platform.embeddings import WordLlamaEmbedder
from dia_assets.platform.memory.store import MemoryStore
from tests.memory_fixtures import db_url, pg_server  # noqa: F401

STAFF = [(1, "King", "Steven", 24000, 0.31, 1200.5), (2, "Yang", "Neena", 17000, 0.28, 300.0),
         (3, "Garcia", "Lex", 9000, 0.22, 55.25), (4, "Ernst", "Bruce", 6000, 0.18, 980.0),
         (5, "Austin", "David", 4800, 0.15, 12.0), (6, "Lorentz", "Diana", 4200, 0.15, 640.75)]
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
    from dia_assets.pipeline import run

    ws, warehouse = tmp_path / "ws", tmp_path / "music.duckdb"
    run(_raw(tmp_path / "raw"), ws, warehouse=str(warehouse))
    with MemoryStore.open(url=db_url, embedder=embedder) as store:
        catalog = refresh_catalog(ws, str(warehouse), store)
        by_id = catalog.by_id()
        assert by_id["attribute:albums.album_id"].identifier
        assert not by_id["attribute:albums.album_title"].identifier
        yield CatalogStore(store), catalog.scope


@pytest.fixture
def staff(tmp_path, db_url, embedder) -> Iterator[tuple[CatalogStore, str]]:  # noqa: F811
    """A warehouse whose column names a plain question does not use: `surname` for last_name,
    `levy` for tax_rate, an abbreviated, glued `acctbal`."""
    from dia_assets.pipeline import run

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "employees.csv").write_text("employee_id,last_name,first_name,salary,tax_rate,acctbal\n" + "".join(
        f"{i},{a},{b},{c},{d},{e}\n" for i, a, b, c, d, e in STAFF))
    ws, warehouse = tmp_path / "ws", tmp_path / "staff.duckdb"
    run(raw, ws, warehouse=str(warehouse))
    with MemoryStore.open(url=db_url, embedder=embedder) as store:
        catalog = refresh_catalog(ws, str(warehouse), store)
        assert catalog.by_id()["attribute:employees.acctbal"].label == "account balance"
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
    assert expected_types("How many units are left in stock?") == {"integer"}  # a count, not an amount
    assert content_words("How much does each employee earn?") == "employee earn"
    assert content_words("What is each worker's surname?") == "worker surname"  # no possessive 's'



SYNONYM_QUESTIONS = {"What is each worker's surname?": "employees.last_name",
                     "What levy rate applies to each worker?": "employees.tax_rate",
                     "How much money is in each worker's account?": "employees.acctbal"}


def test_lexicon_bridges_words_the_schema_does_not_use(staff, monkeypatch) -> None:
    store, scope = staff
    for question, want in SYNONYM_QUESTIONS.items():
        assert _columns(store, question, scope)[0] == want, (question, _columns(store, question, scope)[:5])
    # the same questions without the lexicon: surname and levy are no longer bridged
    monkeypatch.setattr(catalog_store, "lexicon", lambda: type("NoLexicon", (), {
        "relation": lambda s, a, b: 0.0, "base_forms": lambda s, w, pos: ()})())
    lost = [q for q, want in SYNONYM_QUESTIONS.items() if _columns(store, q, scope)[0] != want]
    assert lost, "the lexicon term changed no ranking"


def test_lexicon_relations() -> None:
    lex = lexicon()
    assert lex.relation("levy", "tax") > 0  # tax is a kind of levy
    assert lex.relation("surname", "last_name") == SYNONYM
    assert lex.relation("movies", "film") == SYNONYM  # plural reduced to its lemma
    assert lex.relation("clerk", "employees") == LINK  # hypernym, either direction
    assert lex.relation("earn", "salary") == LINK  # derivation: earn -> earnings (pay, salary)
    assert lex.relation("levy", "name") == 0 and lex.relation("xyzzy", "tax") == 0
    assert "movie" in lex.base_forms("movies", "n") and "bear" in lex.base_forms("born", "v")


def test_lexical_links_and_alignment() -> None:
    pairs = {("surname", "last_name"): 1.0, ("levy", "tax"): 0.8}
    links = lexical_links(["worker", "surname"], ["last", "name", "employees"],
                          lambda a, b: pairs.get((a, b), 0.0))
    assert links.tolist() == [[0, 0, 0], [1, 1, 0]]  # the two-word lemma marks both of its words
    q = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)
    w = np.array([[0.6, 0.8]], dtype=np.float32)
    assert alignment(q, w) == pytest.approx((0.6 + 0.8) / 2)
    assert alignment(q, w, np.array([[0.0], [1.0]])) == pytest.approx((0.6 + 1.0) / 2)  # link raises, never lowers


def test_abbreviations_written_out() -> None:
    from dia_assets.platform.key_names import SchemaNames

    names = SchemaNames([])
    assert abbreviations()["qty"] == ("quantity",)
    assert name_words(names, "partsupp", "availqty") == ["available", "quantity"]
    assert name_words(names, "customer", "acctbal") == ["account", "balance"]
    assert name_words(names, "jobs", "min_salary") == ["minimum", "salary"]
    assert name_words(names, "orders", "discount") == ["discount"]  # a known word stays whole
    assert name_words(names, "lineitem", "receiptdate") == ["receipt", "date"]  # WordNet's word, not the tokenizer's


def test_alignment_takes_the_lemma_when_it_is_closer() -> None:
    q = np.array([[1.0, 0.0]], dtype=np.float32)  # "genres": far from the name word
    lemma = np.array([[0.0, 1.0]], dtype=np.float32)  # "genre": close to it
    w = np.array([[0.0, 1.0]], dtype=np.float32)
    assert alignment(q, w) == pytest.approx(0.0)
    assert alignment(q, w, None, lemma) == pytest.approx(1.0)
    assert alignment(lemma, w, None, q) == pytest.approx(1.0)  # the higher of the two, never lower


FILMS = [("Blue Hour", "Drama", 96), ("Salt and Smoke", "Action", 110), ("Paper Moon", "Comedy", 88),
         ("Glass Garden", "Horror", 101), ("Open Sky", "Documentary", 75), ("Slow Fire", "Action", 120)]


@pytest.fixture
def films(tmp_path, db_url, embedder) -> Iterator[tuple[CatalogStore, str]]:  # noqa: F811
    """A film table whose `category` a question calls "genres" (a plural the static embedding
    places far from its lemma)."""
    from dia_assets.pipeline import run

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "films.csv").write_text("film_id,title,category,length\n" + "".join(
        f"{i},{t},{c},{n}\n" for i, (t, c, n) in enumerate(FILMS, start=1)))
    ws, warehouse = tmp_path / "ws", tmp_path / "films.duckdb"
    run(raw, ws, warehouse=str(warehouse))
    with MemoryStore.open(url=db_url, embedder=embedder) as store:
        yield CatalogStore(store), refresh_catalog(ws, str(warehouse), store).scope


def test_question_words_align_by_their_lemma(films, monkeypatch) -> None:
    store, scope = films
    question = "Which genres are there?"
    assert _columns(store, question, scope)[0] == "films.category", _columns(store, question, scope)[:5]
    # without lemmas ("genres" compared as spelled) the category column is no longer first
    lex = lexicon()
    monkeypatch.setattr(catalog_store, "lexicon", lambda: type("NoLemma", (), {
        "relation": lex.relation, "base_forms": lambda s, w, pos: ()})())
    assert _columns(store, question, scope)[0] != "films.category"


def test_rarity_weights_question_words_by_how_few_candidates_match_them() -> None:
    best = np.array([[1.0, 0.2, 0.1], [1.0, 0.95, 0.0], [1.0, 0.1, 0.3]], dtype=np.float32)
    w = rarity(best)
    assert w[0] == pytest.approx(0.0)  # matched by every candidate: says nothing about which one
    assert w[1] == pytest.approx(np.log(4 / 2) / np.log(4))  # matched by one of three
    assert w[2] == pytest.approx(1.0)  # matched by none: full weight
    assert weighted_mean(best[1], w) > weighted_mean(best[0], w)  # the candidate the rare word picks wins
    assert weighted_mean(best[1], None) == pytest.approx(best[1].mean())  # no weights: plain mean
    assert weighted_mean(best[1], np.zeros(3)) == pytest.approx(best[1].mean())  # all zero: plain mean
    q = np.eye(2, dtype=np.float32)
    assert alignment(q, q[:1], weights=np.array([1.0, 0.0])) == pytest.approx(1.0)


CLIENTS = [(101, "Atelier Nova", 21000.0, "Lyon"), (102, "Baltic Gifts", 59700.0, "Riga"),
           (103, "Corner Models", 0.0, "Porto"), (104, "Dune Traders", 81700.0, "Cairo"),
           (105, "Elm Street Toys", 45300.0, "Boston"), (106, "Fjord Hobbies", 76400.0, "Bergen")]


@pytest.fixture
def clients(tmp_path, db_url, embedder) -> Iterator[tuple[CatalogStore, str]]:  # noqa: F811
    """Customers and their payments: "client" is a synonym of every `customers` column's table
    word, so it decides nothing between a customer's credit limit and a payment's amount."""
    from dia_assets.pipeline import run

    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "customers.csv").write_text("customer_number,customer_name,credit_limit,city\n" + "".join(
        f"{i},{n},{c},{t}\n" for i, n, c, t in CLIENTS))
    (raw / "payments.csv").write_text("customer_number,check_number,payment_date,amount\n" + "".join(
        f"{101 + i % 6},CH{7000 + i},2024-0{1 + i % 9}-1{i % 10},{round(1500 + 731.5 * i, 2)}\n"
        for i in range(18)))
    ws, warehouse = tmp_path / "ws", tmp_path / "clients.duckdb"
    run(raw, ws, warehouse=str(warehouse))
    with MemoryStore.open(url=db_url, embedder=embedder) as store:
        yield CatalogStore(store), refresh_catalog(ws, str(warehouse), store).scope


def test_a_word_every_column_of_a_table_matches_does_not_pick_the_column(clients, monkeypatch) -> None:
    store, scope = clients
    question = "How much money did each client send us?"
    assert _columns(store, question, scope)[0] == "payments.amount", _columns(store, question, scope)[:5]
    # every question word weighted alike: "client" / customers lifts the credit limit above the amount
    monkeypatch.setattr(catalog_store, "rarity", lambda best: np.ones(best.shape[1], dtype=np.float32))
    assert _columns(store, question, scope)[0] != "payments.amount", _columns(store, question, scope)[:5]
