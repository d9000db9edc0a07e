"""Conflicts by meaning (same subject, different claim), the confirmation judge wired into
the memory resource, and fresh-memory replanning."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dia_assets.agents.query.memory import (
    FreshMemory,
    InMemoryMemory,
    Item,
    used_in_previous_answer,
)
from dia_assets.platform.memory import MemoryStore
from dia_assets.platform.memory.conflicts import (
    ConflictPolicy,
    JudgeVerdict,
    probe_subject,
    same_subject,
)
from dia_assets.platform.memory.models import Kind, NewMemory, Status
from tests import memory_fixtures

pg_server = memory_fixtures.pg_server
db_url = memory_fixtures.db_url
store = memory_fixtures.store


def pref(question: str, answer: str, probe: str = "SELECT COUNT(*) > 0 FROM staff") -> NewMemory:
    return NewMemory(kind=Kind.PREFERENCE, title=f"User preference: {question}", scope="db-a",
                     body=f"Asked '{question}', the user answered: {answer}.", probe_sql=probe)


def test_a_table_existence_probe_names_no_subject() -> None:
    assert probe_subject("SELECT COUNT(*) > 0 FROM staff") is None
    assert probe_subject("SELECT EXISTS (SELECT 1 FROM staff WHERE role = 'Porter')") is not None


def test_unrelated_preferences_about_one_table_both_stay_active(store: MemoryStore) -> None:
    first = store.insert(pref("Which roles count as clinical?", "Nurses and doctors."))
    second = store.insert(pref("Should former employees be counted?", "No, only the HR list."))
    assert second.conflicts == []
    assert store.get(first.id).status == Status.ACTIVE and store.get(second.id).status == Status.ACTIVE


def test_a_contradicting_answer_to_the_same_question_is_a_conflict(store: MemoryStore) -> None:
    first = store.insert(pref("Should former employees be counted?", "No, only the HR list."))
    second = store.insert(pref("Should former employees be counted?", "Yes, payroll counts them too."))
    assert [(c.other_id, c.resolution) for c in second.conflicts] == [(first.id, "new_wins")]
    assert store.get(first.id).status == Status.SUPERSEDED


def test_same_subject_for_lessons_is_the_same_precondition() -> None:
    probe = "SELECT count(*) > count(DISTINCT badge) FROM shifts_assignments"
    a = NewMemory(kind=Kind.AGGREGATION, title="Count staff once", body="Use COUNT(DISTINCT badge).", probe_sql=probe)
    b = NewMemory(kind=Kind.AGGREGATION, title="Other words", body="Use COUNT(*).", probe_sql=probe.upper())
    c = NewMemory(kind=Kind.AGGREGATION, title="Count staff once", body="x",
                  probe_sql="SELECT count(*) > 0 FROM payroll WHERE period = '2026-01'")
    assert same_subject(a, b) and not same_subject(a, c)  # type: ignore[arg-type]


def test_confirmation_strategy_gets_a_judge(monkeypatch: pytest.MonkeyPatch) -> None:
    """`conflict_strategy="confirmation"` wires the litellm judge into the store."""
    from dia_assets.dagster.resources.embeddings import EmbeddingsResource
    from dia_assets.dagster.resources.memory import MemoryResource

    opened: dict = {}

    def fake_open(**kwargs):  # noqa: ANN003, ANN202
        opened.update(kwargs)
        return object()

    monkeypatch.setattr(MemoryStore, "open", staticmethod(fake_open))
    resource = MemoryResource(embeddings=EmbeddingsResource(), conflict_strategy="confirmation",
                              judge_model="fake/judge")
    resource.store()
    assert callable(opened["judge"]) and opened["policy"] == ConflictPolicy(strategy="confirmation")
    monkeypatch.delenv("DIA_MODEL", raising=False)
    with pytest.raises(ValueError, match="no model for the conflict judge"):
        MemoryResource(embeddings=EmbeddingsResource(), conflict_strategy="confirmation").store()
    recency = MemoryResource(embeddings=EmbeddingsResource())
    opened.clear()
    recency.store()
    assert opened["judge"] is None


def test_the_judge_decides_a_confirmation_conflict(store: MemoryStore) -> None:
    first = store.insert(pref("Should former employees be counted?", "No, only the HR list."))
    second = store.insert(pref("Should former employees be counted?", "Yes, payroll counts them too."),
                          judge=lambda new, old: JudgeVerdict.OLD_WINS, policy=ConflictPolicy(strategy="confirmation"))
    assert second.status == Status.SUPERSEDED and store.get(first.id).status == Status.ACTIVE


def test_fresh_memory_holds_back_what_the_failed_answer_used(tmp_path: Path) -> None:
    folder = tmp_path / "queries" / "q1"
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps({"memory_used": [{"id": "m1", "title": "t", "verified": True}]}))
    held = used_in_previous_answer(tmp_path, "q1")
    assert held == {"m1"} and used_in_previous_answer(tmp_path, "other") == set()
    inner = InMemoryMemory([Item("m1", "staff counts use badge", "rule one", "SELECT TRUE", "aggregation", "session"),
                            Item("m2", "staff counts skip former staff", "rule two", "SELECT TRUE", "aggregation",
                                 "session")])
    fresh = FreshMemory(inner, held)
    assert [r.id for r in fresh.recall("staff counts")] == ["m2"]
    assert fresh.pull("m1") is None and fresh.pull("m2") is not None
