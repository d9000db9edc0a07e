"""Modification tasks: scratch copy, post-condition, applied only when it holds and writes
are allowed."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.query import AgentSettings, InMemoryMemory, answer_question
from dia_assets.platform.model.litellm import litellm_chat
from tests.query_fixtures import FAKE_MODEL, build_tiny_duckdb, call, register_tools

Q = "Remove the cancelled shifts from the roster."
CONTRACT = call("declare_contract", kind="modification", targets=["shifts"],
                post_condition_sql="SELECT COUNT(*) = 0 FROM shifts WHERE status = 'cancelled'")


def _count(path: Path, sql: str) -> int:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


def run(path: Path, steps: list, **kwargs):  # noqa: ANN001, ANN201
    register_tools(steps)
    return answer_question(Q, path, chat=litellm_chat(FAKE_MODEL), memory=InMemoryMemory(), **kwargs)


def test_failed_post_condition_is_not_applied(tmp_path: Path) -> None:
    wh = build_tiny_duckdb(tmp_path / "w.duckdb")
    result, run_ = run(wh, [CONTRACT, call("submit", sql="DELETE FROM shifts WHERE status = 'CANCELLED'")],
                       allow_writes=True, settings=AgentSettings(max_attempts=1))
    assert result.status == "failed"
    assert result.modification is not None and not result.modification.scratch_passed
    assert not result.modification.applied and "post-condition fails" in result.modification.detail
    assert _count(wh, "SELECT COUNT(*) FROM shifts") == 3  # the warehouse is untouched


def test_post_condition_holds_but_writes_not_allowed(tmp_path: Path) -> None:
    wh = build_tiny_duckdb(tmp_path / "w.duckdb")
    result, _ = run(wh, [CONTRACT, call("submit", sql="DELETE FROM shifts WHERE status = 'cancelled'")])
    assert result.status == "answered" and result.modification.scratch_passed
    assert not result.modification.applied and "writes are not allowed" in result.modification.detail
    assert _count(wh, "SELECT COUNT(*) FROM shifts") == 3


def test_repaired_modification_is_applied_when_allowed(tmp_path: Path) -> None:
    wh = build_tiny_duckdb(tmp_path / "w.duckdb")
    result, run_ = run(wh, [
        CONTRACT,
        call("submit", sql="SELECT * FROM shifts WHERE status = 'cancelled'"),  # not a modification
        call("submit", sql="DELETE FROM shifts WHERE status = 'CANCELLED'"),    # post-condition fails
        call("submit", sql="DELETE FROM shifts WHERE lower(status) = 'cancelled'"),
    ], allow_writes=True)
    assert result.status == "answered" and result.attempts == 3
    assert result.modification.applied
    assert run_.trace["failures"] == ["not_a_modification", "post_condition"]
    assert _count(wh, "SELECT COUNT(*) FROM shifts") == 2
    assert _count(wh, "SELECT COUNT(*) FROM shifts WHERE status = 'cancelled'") == 0


def test_ddl_runs_on_the_scratch_copy_first(tmp_path: Path) -> None:
    wh = build_tiny_duckdb(tmp_path / "w.duckdb")
    register_tools([
        call("declare_contract", kind="modification", targets=["department_headcount"],
             post_condition_sql="SELECT COUNT(*) = 2 AND SUM(headcount) = 4 FROM department_headcount"),
        call("submit", sql="CREATE TABLE department_headcount AS SELECT department_code, COUNT(*) AS headcount "
                           "FROM staff WHERE role <> 'Ward Clerk' GROUP BY department_code"),
        call("submit", sql="CREATE TABLE department_headcount AS SELECT department_code, COUNT(*) AS headcount "
                           "FROM staff GROUP BY department_code"),
    ])
    result, _ = answer_question("Create a table with the headcount of each department.", wh,
                                chat=litellm_chat(FAKE_MODEL), allow_writes=True)
    assert result.status == "answered" and result.attempts == 2 and result.modification.applied
    assert _count(wh, "SELECT SUM(headcount) FROM department_headcount") == 4


@pytest.mark.parametrize("sql", ["ATTACH 'x.db' AS x", "COPY staff TO 'x.csv'", "CREATE SECRET s (TYPE s3)"])
def test_modifications_still_refuse_escapes(tmp_path: Path, sql: str) -> None:
    wh = build_tiny_duckdb(tmp_path / "w.duckdb")
    result, run_ = run(wh, [CONTRACT, call("submit", sql=sql)], allow_writes=True,
                       settings=AgentSettings(max_attempts=1))
    assert result.status == "failed" and result.modification is None
    assert run_.trace["failures"][0] in {"statement_refused", "parse_error"}
