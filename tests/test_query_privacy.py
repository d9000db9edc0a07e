"""Privacy mode (DIA_PRIVACY): every request sent to the model (captured by the scripted
litellm provider) is searched for values planted in the data."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.query import AgentSettings, InMemoryMemory, answer_question
from dia_assets.platform.model.litellm import litellm_chat
from tests.query_fixtures import FAKE_MODEL, build_tiny_duckdb, call, register_tools

PLANTED = ["Zorblax", "Quintavius", "Chief Wizard", "Nebulon"]
CONTRACT = call("declare_contract", kind="analytical", columns=["role", "n"],
                granularity={"description": "role", "key_columns": ["role"]})
GOOD = "SELECT role, COUNT(*) AS n FROM staff GROUP BY role"


def _warehouse(tmp_path: Path) -> Path:
    wh = build_tiny_duckdb(tmp_path / "w.duckdb")
    con = duckdb.connect(str(wh))
    con.execute("INSERT INTO staff VALUES ('B9', 'Zorblax', 'Quintavius', 'Chief Wizard', 'ICU', 99.0)")
    con.execute("UPDATE departments SET building = 'Nebulon' WHERE department_code = 'ICU'")
    con.close()
    return wh


def _steps() -> list:
    return [
        CONTRACT,
        call("probe", sql="SELECT first_name, last_name FROM staff"),
        call("probe", sql="SELECT MAX(last_name) AS m FROM staff"),
        call("probe", sql="SELECT role, COUNT(*) AS n FROM staff GROUP BY role"),
        call("probe", sql="SELECT COUNT(*) AS n FROM staff WHERE CAST(first_name AS INTEGER) > 0"),
        call("probe", sql="SELECT COUNT(*) AS n, COUNT(DISTINCT role) AS roles FROM staff"),
        call("describe_table", name="staff"),
        call("describe_table", name="departments"),
        call("search_schema", term="wizard"),
        call("submit", sql="SELECT role, badge AS n FROM staff"),  # repeats roles: fails granularity
        call("submit", sql=GOOD),
        call("write_lesson", kind="aggregation", title="Count staff per role",
             rule="Group staff by role.", probe_sql="SELECT COUNT(*) > 0 FROM staff"),
    ]


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str):  # noqa: ANN202
    monkeypatch.setenv("DIA_PRIVACY", mode)
    handler = register_tools(_steps())
    result, run = answer_question("How many staff per role?", _warehouse(tmp_path), chat=litellm_chat(FAKE_MODEL),
                                  memory=InMemoryMemory(), settings=AgentSettings(timeout_s=5))
    return result, run, json.dumps(handler.requests, ensure_ascii=False, default=str)


@pytest.mark.parametrize("mode", ["schema-only", "aggregates"])
def test_no_data_value_reaches_the_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str) -> None:
    result, run, sent = _run(tmp_path, monkeypatch, mode)
    assert result.status == "answered" and result.privacy == mode and run.trace["privacy"] == mode
    assert [v for v in PLANTED if v in sent] == []
    probes = [e for e in run.trace["events"] if e["event"] == "tool" and e["name"] == "probe"]
    assert "privacy mode" in probes[0]["result"] and "privacy mode" in probes[1]["result"]
    assert '"rows": [[5, 4]]' in probes[4]["result"]  # counts still answer
    assert result.preview  # the user still gets the rows; only the model does not


def test_samples_mode_is_the_default_and_shows_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DIA_PRIVACY", raising=False)
    monkeypatch.setenv("DIA_PRIVACY", "")
    result, run, sent = _run(tmp_path, monkeypatch, "samples")
    assert result.status == "answered" and result.privacy == "samples"
    assert "Zorblax" in sent and "Chief Wizard" in sent  # the control: planted values do travel here


def test_aggregates_allow_statistics_schema_only_allows_counts() -> None:
    from dia_assets.platform.sql.gate import check_privacy
    from dia_assets.platform.sql.safety import SQLRefused, check_sql

    schema = {"staff": {"badge": "VARCHAR", "role": "VARCHAR", "hourly_rate": "DECIMAL"}}

    def ok(sql: str, mode: str) -> bool:
        try:
            check_privacy(check_sql(sql, "duckdb", schema).qualified, mode)
        except SQLRefused:
            return False
        return True

    assert ok("SELECT AVG(hourly_rate) FROM staff", "aggregates")
    assert not ok("SELECT AVG(hourly_rate) FROM staff", "schema-only")
    assert ok("SELECT COUNT(*) > 0, COUNT(DISTINCT role) FROM staff", "schema-only")
    assert not ok("SELECT role, COUNT(*) FROM staff GROUP BY role", "aggregates")
    assert not ok("SELECT string_agg(role, ',') FROM staff", "aggregates")
    assert not ok("SELECT (SELECT MIN(badge) FROM staff) AS b", "aggregates")
    assert not ok("SELECT * FROM (SELECT COUNT(*) AS n FROM staff) t", "schema-only")
    assert ok("SELECT COUNT(*) FILTER (WHERE role = 'x') FROM staff", "schema-only")


def test_interpreter_model_pass_respects_privacy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dia_assets.agents.interpreter import interpret
    from dia_assets.agents.interpreter.enrich import enrich
    from dia_assets.dagster.resources import LLMResource
    from tests.fake_llm import register

    (tmp_path / "staff.csv").write_text("badge,name\nB1,Zorblax\nB2,Quintavius\nB3,Nebulon\n")
    for mode, leaks in (("schema-only", False), ("aggregates", False), ("samples", True)):
        monkeypatch.setenv("DIA_PRIVACY", mode)
        fake = register(["{}"])
        llm = LLMResource(model="fake/scripted")
        enrich(interpret(tmp_path), lambda m, llm=llm: llm.complete(m)[0], llm.model)
        sent = json.dumps(fake.calls, default=str)
        assert any(v in sent for v in PLANTED) is leaks, mode


def test_staff_names_of_the_example_warehouse_stay_out_of_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Finding 9: the opening prompt, describe_table and probes used to carry staff names."""
    from tests.query_fixtures import build_example_warehouse

    wh = build_example_warehouse(tmp_path / "hospital.duckdb")
    con = duckdb.connect(str(wh), read_only=True)
    people = {v for (v,) in con.execute(
        "SELECT DISTINCT first_name FROM staff UNION SELECT DISTINCT last_name FROM staff "
        "UNION SELECT DISTINCT email FROM staff").fetchall() if v and len(v) >= 4}
    con.close()
    steps = [
        call("declare_contract", kind="analytical", columns=["role", "n"],
             granularity={"description": "role", "key_columns": ["role"]}),
        call("probe", sql="SELECT first_name, last_name, email FROM staff"),
        call("describe_table", name="staff"),
        call("search_schema", term="nurse"),
        call("submit", sql="SELECT role, COUNT(*) AS n FROM staff GROUP BY role"),
    ]
    sent: dict[str, str] = {}
    for mode in ("schema-only", "samples"):
        monkeypatch.setenv("DIA_PRIVACY", mode)
        handler = register_tools(list(steps))
        result, _ = answer_question("How many staff per role?", wh, chat=litellm_chat(FAKE_MODEL),
                                    settings=AgentSettings(reflect=False))
        assert result.status == "answered"
        sent[mode] = json.dumps(handler.requests, ensure_ascii=False, default=str)
    assert len(people) > 20
    assert sorted(v for v in people if v in sent["schema-only"]) == []
    assert any(v in sent["samples"] for v in people)  # the control
