"""Every scripted example-question plan of bench/agent.py is accepted on the example
warehouse: the componentwise checks pass correct SQL (no false alarms)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from dia_assets.agents.query import (
    AgentSettings,
    QueryAgent,
    SchemaIndex,
    load_questions,
    open_database,
)
from dia_assets.platform.model.litellm import litellm_chat
from tests.query_fixtures import FAKE_MODEL, ROOT, build_example_warehouse, register_tools


def _bench():  # noqa: ANN202
    spec = importlib.util.spec_from_file_location("bench_agent", ROOT / "bench" / "agent.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_question_plans_are_answered(tmp_path: Path) -> None:
    bench = _bench()
    db = open_database(build_example_warehouse(tmp_path / "warehouse.duckdb"))
    try:
        index = SchemaIndex.build(db)
        questions = [q for q in load_questions(ROOT / "examples" / "data" / "questions.yaml") if q["id"] in bench.PLANS]
        assert len(questions) == len(bench.PLANS) >= 12
        for q in questions:
            register_tools(bench.script(q["id"], q["question"]))
            run = QueryAgent(db, index, litellm_chat(FAKE_MODEL), memory=bench._memory(),
                             settings=AgentSettings()).answer(q["question"], q["id"])
            assert run.result.status == "answered", (q["id"], run.trace["failures"])
            assert run.result.verification.passed and run.result.attempts == 1
            assert [m.verified for m in run.result.memory_used] == [True]
            if q["id"] == "department_heads":
                assert run.result.row_count == 12 and run.result.lineage["building"] == ["hospital_departments.building"]
    finally:
        db.close()


@pytest.mark.parametrize("tables", [50])
def test_schema_linking_keeps_the_prompt_small(tmp_path: Path, tables: int) -> None:
    from tests.query_fixtures import generated_schema

    db = open_database(generated_schema(tmp_path / "wide.duckdb", tables=tables))
    try:
        index = SchemaIndex.build(db)
        linked = index.link("What is the total invoice amount per customer region for closed invoices?")
        assert linked[:2] == ["invoice", "customer"] and len(linked) <= 8
        assert len(index.render(linked)) * 3 < len(index.render(sorted(index.tables)))
        assert any(h.get("values") == ["closed"] for h in index.search("closed"))
    finally:
        db.close()
