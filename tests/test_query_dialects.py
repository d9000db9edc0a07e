"""SQLite and PostgreSQL end to end (executed), and the adapter to the shared memory store."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from dia_assets.agents.query import (
    AgentSettings,
    InMemoryMemory,
    StoreMemory,
    answer_question,
)
from dia_assets.agents.query.dialects import PostgresDatabase, open_database
from dia_assets.agents.query.memory import Item
from dia_assets.platform.model.litellm import litellm_chat
from tests.memory_fixtures import db_url, hash_store, pg_server  # noqa: F401 - pytest fixtures
from tests.query_fixtures import (
    FAKE_MODEL,
    build_sqlite,
    build_tiny_duckdb,
    call,
    register_tools,
    tiny_warehouse_sql,
)

Q = "What is the average hourly rate of the staff in each department, highest first?"
CONTRACT = call("declare_contract", kind="analytical", columns=["department_code", "avg_hourly_rate"],
                granularity={"description": "department", "key_columns": ["department_code"]},
                order=[{"column": "avg_hourly_rate", "direction": "desc"}])
SQL = ("SELECT department_code, AVG(hourly_rate) AS avg_hourly_rate FROM staff "
       "GROUP BY department_code ORDER BY avg_hourly_rate DESC")


def _ask(warehouse: str | Path, steps: list, **kwargs):  # noqa: ANN001, ANN201
    register_tools(steps)
    return answer_question(Q, warehouse, chat=litellm_chat(FAKE_MODEL), memory=InMemoryMemory(), **kwargs)


def test_sqlite_end_to_end(tmp_path: Path) -> None:
    wh = build_sqlite(tmp_path / "w.sqlite")
    result, run = _ask(wh, [
        CONTRACT,
        call("probe", sql="SELECT strftime('%Y-%m', shift_date) AS month, COUNT(*) FROM shifts GROUP BY 1"),
        call("submit", sql="DELETE FROM staff"),
        call("submit", sql=SQL),
    ])
    assert result.status == "answered" and result.dialect == "sqlite"
    assert [r[0] for r in result.preview] == ["ICU", "CARD"]
    assert result.preview[0][1] == pytest.approx(67.75)
    assert run.trace["failures"] == ["write_refused"]
    assert "snowflake" in result.transpiled


@pytest.fixture
def pg_warehouse(db_url: str) -> str:  # noqa: F811
    with psycopg.connect(db_url, autocommit=True) as con:
        for stmt in tiny_warehouse_sql():
            con.execute(stmt)
    return db_url


def test_postgres_end_to_end(pg_warehouse: str) -> None:
    result, run = _ask(pg_warehouse, [
        CONTRACT,
        call("probe", sql="SELECT to_char(shift_date, 'YYYY-MM') AS month, COUNT(*) FROM shifts GROUP BY 1"),
        call("probe", sql="SELECT pg_read_file('/etc/passwd')"),
        call("submit", sql="UPDATE staff SET hourly_rate = 0"),
        call("submit", sql=SQL),
    ])
    assert result.status == "answered" and result.dialect == "postgres"
    assert [r[0] for r in result.preview] == ["ICU", "CARD"]
    assert "reads outside the database" in [e for e in run.trace["events"] if e["event"] == "tool"][2]["result"]
    from dia_assets.agents.query.memory import warehouse_fingerprint

    assert warehouse_fingerprint(pg_warehouse).startswith("db-")
    db = open_database(pg_warehouse)
    try:
        assert isinstance(db, PostgresDatabase)
        with pytest.raises(psycopg.errors.ReadOnlySqlTransaction):
            db.query("DELETE FROM staff")
        assert db.query("SELECT COUNT(*) FROM staff WHERE hourly_rate > 0").rows == [(4,)]
    finally:
        db.close()


def test_postgres_modification_scratch_is_a_rolled_back_transaction(pg_warehouse: str) -> None:
    register_tools([
        call("declare_contract", kind="modification", targets=["shifts"],
             post_condition_sql="SELECT COUNT(*) = 0 FROM shifts WHERE status = 'cancelled'"),
        call("submit", sql="DELETE FROM shifts WHERE status = 'CANCELLED'"),
        call("submit", sql="DELETE FROM shifts WHERE status = 'cancelled'"),
    ])
    result, run = answer_question("Remove the cancelled shifts.", pg_warehouse, chat=litellm_chat(FAKE_MODEL))
    assert result.status == "answered", [e.get("result") for e in run.trace["events"] if e["event"] == "tool"]
    assert result.status == "answered" and result.attempts == 2
    assert result.modification.scratch_passed and not result.modification.applied
    with psycopg.connect(pg_warehouse) as con:
        assert con.execute("SELECT COUNT(*) FROM shifts").fetchone()[0] == 3


def test_store_memory_adapter_recall_verify_and_lessons(hash_store, tmp_path: Path) -> None:  # noqa: ANN001, F811
    from dia_assets.platform.memory import Kind, NewMemory, Tier

    wh = build_tiny_duckdb(tmp_path / "w.duckdb")
    scope = "db-test"
    good = hash_store.insert(NewMemory(
        tier=Tier.SESSION, kind=Kind.AGGREGATION, scope=scope,
        title="average hourly rate per department uses staff.hourly_rate",
        body="Average hourly rate: AVG(staff.hourly_rate) grouped by staff.department_code.",
        probe_sql="SELECT COUNT(*) > 0 FROM staff WHERE hourly_rate IS NOT NULL", evidence=["seen"],
    )).id
    stale = hash_store.insert(NewMemory(
        tier=Tier.SESSION, kind=Kind.FILTER, scope=scope,
        title="hourly rate is stored in cents per department",
        body="Divide hourly_rate by 100.",
        probe_sql="SELECT COUNT(*) > 0 FROM staff WHERE hourly_rate > 1000", evidence=["seen"],
    )).id
    memory = StoreMemory(hash_store, scope)
    register_tools([
        CONTRACT,
        call("recall", query="average hourly rate department"),
        call("read_memory", id=str(good)),
        call("read_memory", id=str(stale)),
        call("submit", sql=SQL),
        call("write_lesson", kind="output_convention", title="Order rates highest first when asked",
             rule="Questions asking for the highest first order by the metric descending.",
             probe_sql="SELECT COUNT(*) > 0 FROM staff"),
    ])
    result, run = answer_question(Q, wh, chat=litellm_chat(FAKE_MODEL), memory=memory,
                                  settings=AgentSettings(memory_refs=2))
    assert result.status == "answered"
    refs = [e for e in run.trace["events"] if e["event"] == "tool" and e["name"] == "recall"][0]["result"]
    assert "average hourly rate per department" in refs
    assert {m.id: m.verified for m in result.memory_used} == {str(good): True, str(stale): False}
    assert hash_store.get(good).use_count == 1 and hash_store.get(good).success_count == 1
    assert hash_store.get(stale).use_count == 0
    assert len(result.lessons_written) == 1
    lesson = hash_store.get(int(result.lessons_written[0]))
    assert lesson.tier == Tier.SESSION and lesson.scope == scope and lesson.probe_sql == "SELECT COUNT(*) > 0 FROM staff"
    # an in-process item with the same protocol
    mem = InMemoryMemory([Item("x", "t", "b", None, tier="example")])
    assert mem.verify(mem.pull("x"), lambda sql: [])[0]
