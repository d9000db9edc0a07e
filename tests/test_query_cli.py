"""`dia ask`: clarification on the terminal, session carryover, and the no-model message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from dia_assets.cli.ask import ask
from tests.query_fixtures import FAKE_MODEL, build_tiny_duckdb, call, register_tools

app = typer.Typer()
app.command()(ask)
app.command("noop")(lambda: None)  # two commands: `ask` is addressed by name, as under `dia`

COUNT_CONTRACT = call("declare_contract", kind="analytical", columns=["department_code", "staff_count"],
                      granularity={"description": "department", "key_columns": ["department_code"]},
                      order=[{"column": "department_code", "direction": "asc"}])
COUNT_SQL = "SELECT department_code, COUNT(*) AS staff_count FROM staff GROUP BY 1 ORDER BY 1"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    ws = tmp_path / "ws"
    ws.mkdir()
    build_tiny_duckdb(ws / "warehouse.duckdb")
    return {"DIA_WORKSPACE": str(ws), "DIA_MODEL": FAKE_MODEL, "DIA_WAREHOUSE": ""}


def test_ask_with_a_clarification_on_the_terminal_and_a_follow_up(env: dict[str, str]) -> None:
    register_tools([
        call("ask", question="Should ward clerks count as staff?"),
        COUNT_CONTRACT,
        call("submit", sql=COUNT_SQL),
    ])
    out = CliRunner().invoke(app, ["ask", "How many staff per department?", "--no-memory", "--id", "q1",
                                   "--to", "snowflake"],
                             input="yes, every employee\n", env=env)
    assert out.exit_code == 0, out.output
    assert "The agent asks: Should ward clerks count as staff?" in out.output
    assert "status: answered" in out.output and "| CARD | 2 |" in out.output
    assert "-- snowflake:" in out.output
    assert "chart: bar (" in out.output and "chart.png): staff_count per department_code" in out.output
    ws = Path(env["DIA_WORKSPACE"])
    session = json.loads((ws / "queries" / "_session.json").read_text())
    assert session["sql"] == COUNT_SQL and session["clarifications"][0]["answer"] == "yes, every employee"

    fake = register_tools([
        COUNT_CONTRACT,
        call("submit", sql="SELECT * FROM previous WHERE department_code = 'ICU' ORDER BY department_code"),
    ])
    out = CliRunner().invoke(app, ["ask", "Only ICU.", "--no-memory", "--follow-up", "--json"], env=env)
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["status"] == "answered" and result["preview"] == [["ICU", 2]]
    assert result["sql"].upper().startswith("WITH PREVIOUS AS")
    opening = fake.requests[0]["messages"][1]["content"]
    assert "yes, every employee" in opening  # the clarification is short-term memory


def test_ask_without_a_model_says_how_to_set_one(env: dict[str, str]) -> None:
    out = CliRunner().invoke(app, ["ask", "How many staff?"], env={**env, "DIA_MODEL": ""})
    assert out.exit_code == 2
    assert "No model is configured" in out.output and "DIA_MODEL" in out.output


def test_ask_without_a_warehouse(env: dict[str, str], tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["ask", "How many staff?", "--warehouse", str(tmp_path / "none.duckdb")], env=env)
    assert out.exit_code == 2 and "no warehouse" in out.output


@pytest.mark.parametrize("bad", ["../outside", "a/b", "..", ""])
def test_ask_refuses_an_id_that_is_not_a_plain_folder_name(env: dict[str, str], tmp_path: Path, bad: str) -> None:
    out = CliRunner().invoke(app, ["ask", "How many staff?", "--id", bad], env=env)
    assert out.exit_code == 2 and "question id must be" in out.output
    assert not (tmp_path / "outside").exists() and not (tmp_path / "ws" / "queries").exists()


def test_answer_question_refuses_a_path_as_question_id(tmp_path: Path) -> None:
    from dia_assets.agents.query.run import answer_question

    with pytest.raises(ValueError, match="question id must be"):
        answer_question("How many staff?", tmp_path / "w.duckdb", question_id="../x", workspace=tmp_path)
