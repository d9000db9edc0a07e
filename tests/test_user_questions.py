"""The user-worded question set (bench/data/user_questions.jsonl) stays well formed: the linking
and verifier benches read it, and a malformed line would silently shrink their figures."""

from __future__ import annotations

import json
from pathlib import Path

import sqlglot
from sqlglot import exp

PATH = Path(__file__).resolve().parents[1] / "bench" / "data" / "user_questions.jsonl"
FIELDS = {"id", "question", "gold_sql", "db", "evidence", "dialect", "difficulty"}


def _questions() -> list[dict]:
    return [json.loads(line) for line in PATH.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_fields_ids_and_size() -> None:
    qs = _questions()
    assert len(qs) >= 150
    assert sum(q["db"] == "tpch" for q in qs) >= 40
    assert len({q["id"] for q in qs}) == len(qs)
    for q in qs:
        assert set(q) >= FIELDS, q["id"]
        assert q["dialect"] == "duckdb" and q["difficulty"] in ("easy", "medium", "hard")


def test_gold_parses_and_questions_do_not_quote_identifiers() -> None:
    tables: set[tuple[str, str]] = set()
    for q in _questions():
        tree = sqlglot.parse_one(q["gold_sql"], read="duckdb")
        ctes = {c.alias_or_name for c in tree.find_all(exp.CTE)}
        names = {t.name for t in tree.find_all(exp.Table) if t.name not in ctes}
        assert names, q["id"]
        tables |= {(q["db"], n) for n in names}
        text = q["question"].lower()
        assert "_" not in text, q["id"]  # a user does not type snake_case identifiers
        columns = {c.name.lower() for c in tree.find_all(exp.Column)}
        assert not {n for n in columns if "_" in n} & set(text.split()), q["id"]
    assert len(tables) >= 55  # spread over (nearly) every table of the shared datasets
