"""Schema linking in a user's words (dia_assets/agents/query/linking.py): layer prefixes set aside,
link tables found through the keys, the first prompt kept within its token budget."""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.query import AgentSettings, QueryAgent, SchemaIndex, open_database
from dia_assets.agents.query.linking import Linker
from dia_assets.agents.query.tools import AGENT_TOOLS, tool_specs

# two small databases side by side, named as real ones are: a glued layer prefix (`sb`), a
# separate one (`dim_`), abbreviations, and link tables whose names share no word with a question
TABLES = {
    "broker_sbcustomer": ("sb_cust_id INTEGER, sb_cust_name VARCHAR, sb_cust_country VARCHAR", []),
    "broker_sbticker": ("sb_ticker_id INTEGER, sb_ticker_symbol VARCHAR, sb_ticker_exchange VARCHAR", []),
    "broker_sbtransaction": ("sb_txn_id INTEGER, sb_txn_cust_id INTEGER, sb_txn_ticker_id INTEGER, "
                             "sb_txn_shares INTEGER, sb_txn_price DOUBLE",
                             ["sb_txn_cust_id -> broker_sbcustomer.sb_cust_id",
                              "sb_txn_ticker_id -> broker_sbticker.sb_ticker_id"]),
    "broker_sbwatchlist": ("sb_watch_id INTEGER, sb_watch_cust_id INTEGER, sb_watch_name VARCHAR",
                           ["sb_watch_cust_id -> broker_sbcustomer.sb_cust_id"]),
    "studio_dim_performer": ("performer_id INTEGER, full_name VARCHAR", []),
    "studio_dim_movie": ("movie_id INTEGER, title VARCHAR, rating VARCHAR", []),
    "studio_dim_genre": ("genre_id INTEGER, label VARCHAR", []),
    "studio_dim_credits": ("cast_ref INTEGER, feature_ref INTEGER",
                           ["cast_ref -> studio_dim_performer.performer_id",
                            "feature_ref -> studio_dim_movie.movie_id"]),
    "studio_dim_tagging": ("feature_ref INTEGER, kind_ref INTEGER",
                           ["feature_ref -> studio_dim_movie.movie_id", "kind_ref -> studio_dim_genre.genre_id"]),
    "studio_dim_cinema": ("cinema_id INTEGER, city VARCHAR, seats INTEGER", []),
    "studio_dim_screening": ("screening_id INTEGER, cinema_id INTEGER, movie_id INTEGER, starts_at TIMESTAMP",
                             ["cinema_id -> studio_dim_cinema.cinema_id", "movie_id -> studio_dim_movie.movie_id"]),
}


def _index(path: Path, count_filler: int = 0) -> SchemaIndex:
    con = duckdb.connect(str(path))
    for name, (cols, _) in TABLES.items():
        con.execute(f"CREATE TABLE {name} ({cols})")
    for i in range(count_filler):  # unrelated tables that compete for the budget
        con.execute(f"CREATE TABLE ledger_entry_{i} (entry_id INTEGER, account_code VARCHAR, debit DOUBLE, "
                    "credit DOUBLE, booked_on DATE, memo VARCHAR, cost_centre VARCHAR, currency VARCHAR)")
    con.close()
    index = SchemaIndex.build(open_database(path))
    for name, (_, fks) in TABLES.items():
        index.tables[name].foreign_keys = list(fks)
    index.refresh()
    return index


def test_layer_prefixes_are_learned_not_listed(tmp_path: Path) -> None:
    linker = Linker(_index(tmp_path / "w.duckdb"))
    assert linker._split("broker_sbcustomer") == (["broker", "sb"], ["customer"])
    assert linker._split("studio_dim_cinema") == (["studio", "dim"], ["cinema"])
    assert linker.tables["broker_sbtransaction"].entity == ["transaction"]


@pytest.mark.parametrize(("question", "needed"), [
    ("Which customers made the most transactions?", {"broker_sbcustomer", "broker_sbtransaction"}),
    ("How many shares of each ticker symbol were traded?", {"broker_sbticker", "broker_sbtransaction"}),
    ("Which customers keep a watchlist?", {"broker_sbcustomer", "broker_sbwatchlist"}),
    ("Which performers appeared in the most movies?",
     {"studio_dim_performer", "studio_dim_movie", "studio_dim_credits"}),
    ("How many movies are there per genre?", {"studio_dim_movie", "studio_dim_genre", "studio_dim_tagging"}),
])
def test_recall_on_prefixed_names_without_the_budget(tmp_path: Path, question: str, needed: set[str]) -> None:
    """Names only (no embedder): the first four ranked tables carry what the question needs."""
    linker = Linker(_index(tmp_path / "w.duckdb"))
    assert needed <= set(linker.plan(question, full=4).tables), linker.rank(question)


def test_a_question_of_stop_words_still_gets_a_plan(tmp_path: Path) -> None:
    linker = Linker(_index(tmp_path / "w.duckdb"))
    assert len(linker.plan("How many are there?", full=3).tables) == 3


def test_link_tables_are_closed_over_the_keys(tmp_path: Path) -> None:
    """The link tables share no word with the questions: they are found through their keys,
    next to the tables the question names (one in between, or a path of three)."""
    linker = Linker(_index(tmp_path / "w.duckdb"))
    words = ["performer", "played", "movie", "rated", "genre"]
    for bridge in ("studio_dim_credits", "studio_dim_tagging"):
        assert linker._lexical(linker.tables[bridge], words) == 0
    ranked = linker.rank("Which performers played in movies rated R?")
    assert set(ranked[:3]) == {"studio_dim_performer", "studio_dim_movie", "studio_dim_credits"}
    ranked = linker.rank("How many performers are there in each genre?")
    assert set(ranked[:5]) == {"studio_dim_performer", "studio_dim_genre", "studio_dim_credits",
                               "studio_dim_movie", "studio_dim_tagging"}
    scores = linker.scores("How many performers are there in each genre?")
    assert linker._between("studio_dim_performer", "studio_dim_movie", scores) == ["studio_dim_credits"]
    assert linker._between("studio_dim_performer", "studio_dim_genre", scores) == [
        "studio_dim_credits", "studio_dim_movie", "studio_dim_tagging"]
    assert linker._between("studio_dim_performer", "broker_sbticker", scores) == []  # no join path


def test_first_prompt_respects_the_token_budget(tmp_path: Path) -> None:
    """The first prompt, counted as the bench counts it, stays within the budget; a larger
    budget carries more tables (compact), never fewer."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    index = _index(tmp_path / "w.duckdb", count_filler=60)
    db = open_database(tmp_path / "w.duckdb")
    tools = tool_specs(AGENT_TOOLS)
    linked = {}
    for budget in (2200, 3000):
        agent = QueryAgent(db, index, lambda *a, **k: None,
                           settings=AgentSettings(memory_refs=0, link_budget_tokens=budget))
        run = agent.start("Which customers made the most transactions?")
        messages = agent.opening(run)
        assert litellm.token_counter(model="gpt-4o", messages=messages, tools=tools) <= budget
        linked[budget] = list(run.linked)
        assert {"broker_sbcustomer", "broker_sbtransaction"} <= set(run.linked)
        others = messages[1]["content"].split("Other tables (ask describe_table): ")[1].split("\n")[0]
        assert not set(others.split(", ")) & set(run.linked)  # each table is named once
    assert len(linked[3000]) > len(linked[2200]) > 6
    db.close()


def test_wide_tables_list_keys_and_named_columns_first(tmp_path: Path) -> None:
    """A compact line of a 40-column table keeps its keys and the column the question names."""
    con = duckdb.connect(str(tmp_path / "wide.duckdb"))
    cols = ", ".join(f"metric_{i} DOUBLE" for i in range(36))
    con.execute(f"CREATE TABLE sensor (sensor_id INTEGER, site_id INTEGER, {cols}, humidity DOUBLE, note VARCHAR)")
    con.execute("CREATE TABLE site (site_id INTEGER, label VARCHAR)")
    con.close()
    index = SchemaIndex.build(open_database(tmp_path / "wide.duckdb"))
    index.tables["sensor"].primary_key = ["sensor_id"]
    index.tables["sensor"].foreign_keys = ["site_id -> site.site_id"]
    index.refresh()
    plan = Linker(index).plan("What is the average humidity per site?", full=1)
    line = index.render_compact(["sensor"], max_columns=8, prefer=plan.names_column)
    shown = line.split(": ", 1)[1].split(" [")[0].split(", ")
    assert {"sensor_id", "site_id", "humidity"} <= set(shown)
    assert len(shown) == 9 and shown[-1] == "+32 more"
    assert "humidity" not in index.render_compact(["sensor"], max_columns=8)  # not named: cut
