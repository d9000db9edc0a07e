"""Lineage audit: what an answer's SQL reads, `dia lineage` (answers that read a column, the
file rows behind a value, an answer's sources) and the `lineage_report` asset, on a real build
of the example data with an answer written by the agent (scripted model)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import duckdb
import pytest
from dagster import materialize
from typer.testing import CliRunner

from dia_assets.agents.query import InMemoryMemory, answer_question
from dia_assets.cli.app import app
from dia_assets.contracts.lineage import LineageIndex
from dia_assets.contracts.manifest import Manifest
from dia_assets.pipeline import run
from dia_assets.platform.model.litellm import litellm_chat
from dia_assets.platform.sql.reads import sql_reads
from tests.query_fixtures import FAKE_MODEL, call, register_tools

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = {"staff": {"badge": "VARCHAR", "role": "VARCHAR", "hourly_rate": "DECIMAL(10,2)"},
          "payroll": {"badge": "VARCHAR", "gross_pay": "DECIMAL(18,2)", "period": "VARCHAR"}}
ROLE_SQL = ("SELECT role, COUNT(*) AS staff_count FROM staff WHERE hourly_rate > 0 "
            "GROUP BY role ORDER BY staff_count DESC")


def test_sql_reads_every_clause_cte_and_subquery() -> None:
    assert sql_reads(ROLE_SQL, SCHEMA) == {"staff": ["hourly_rate", "role"]}
    cte = ("WITH x AS (SELECT p.badge, sum(gross_pay) AS t FROM payroll p WHERE p.period = '2026-01' GROUP BY 1) "
           "SELECT s.role, x.t FROM x JOIN staff s ON s.badge = x.badge ORDER BY x.t")
    assert sql_reads(cte, SCHEMA) == {"payroll": ["badge", "gross_pay", "period"], "staff": ["badge", "role"]}
    assert sql_reads("SELECT Role FROM Staff WHERE badge IN (SELECT badge FROM payroll)", SCHEMA) == {
        "payroll": ["badge"], "staff": ["badge", "role"]}
    assert sql_reads("SELECT count(*) FROM staff", SCHEMA) == {"staff": []}
    assert sql_reads("SELEC nonsense", SCHEMA) == {}


@pytest.fixture(scope="module")
def answered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A built workspace with one answer ("roles") the agent wrote through the scripted model."""
    tmp = tmp_path_factory.mktemp("lineage")
    shutil.copytree(ROOT / "examples" / "data", tmp / "data")
    ws = tmp / "ws"
    assert run(tmp / "data", ws, overrides_seed=ROOT / "examples" / "data" / "overrides.yaml").report.accepted
    register_tools([
        call("declare_contract", kind="analytical", columns=["role", "staff_count"],
             granularity={"description": "role", "key_columns": ["role"]},
             order=[{"column": "staff_count", "direction": "desc"}], filters=[]),
        call("submit", sql=ROLE_SQL, answer="Registered nurses are the largest group."),
    ])
    result, _ = answer_question("How many paid staff per role?", ws / "warehouse.duckdb",
                                chat=litellm_chat(FAKE_MODEL), memory=InMemoryMemory(), workspace=ws,
                                question_id="roles", manifest_path=ws / "schema" / "manifest.json")
    assert result.status == "answered"
    assert result.reads == {"staff": ["hourly_rate", "role"]}  # recorded by the agent, in result.json
    assert json.loads((ws / "queries" / "roles" / "result.json").read_text())["reads"] == result.reads
    return ws


def _dia(ws: Path, *args: str) -> tuple[int, str]:
    out = CliRunner().invoke(app, ["lineage", *args, "--workspace", str(ws)])
    return out.exit_code, out.output


def test_answers_that_read_a_column(answered: Path) -> None:
    code, text = _dia(answered, "staff.role")
    assert code == 0
    assert "roles: How many paid staff per role?" in text and "staff.csv" in text
    assert "rows 1-405 (405 records)" in text  # staged records of the file
    code, text = _dia(answered, "staff.hourly_rate")  # read by the filter only, not an output column
    assert code == 0 and "roles:" in text
    code, text = _dia(answered, "staff.email")
    assert code == 0 and "roles:" not in text and "no saved answer reads it" in text
    code, text = _dia(answered, "payroll")
    assert code == 0 and "roles:" not in text and "payroll.parquet" in text


def test_where_a_value_came_from(answered: Path) -> None:
    """The rows named are the file's records whose role maps to the value (RN -> Registered Nurse)."""
    code, text = _dia(answered, "staff.role", "--value", "Registered Nurse", "--json")
    assert code == 0, text
    found = json.loads(text)
    manifest = Manifest.read(answered / "schema" / "manifest.json")
    role = manifest.table("staff").column("role")
    with (answered.parent / "data" / "staff.csv").open(encoding="cp1252", newline="") as fh:
        records = list(csv.DictReader(fh, delimiter=";"))
    for number in found["row_numbers"]:
        text_value = records[number - 1]["role"]
        assert role.category_map.get(text_value.strip(), text_value.strip()) == "Registered Nurse"
    matching = sum(1 for r in records
                   if role.category_map.get(r["role"].strip(), " ".join(r["role"].split())) == "Registered Nurse")
    assert found["rows"] == matching
    assert "RN" in found["raw_texts"]  # the spelling in the file, before the category mapping
    code, text = _dia(answered, "staff.hire_date", "--value", "not a date")
    assert code == 2 and "not a DATE value of staff.hire_date" in text


def test_question_lineage_and_errors(answered: Path) -> None:
    code, text = _dia(answered, "--question", "roles")
    assert code == 0
    assert "| role | staff.role |" in text
    assert "| staff | hourly_rate, role | staff.csv (hourly_rate, role) |" in text
    assert "encoding='cp1252'" in text and "delimiter=';'" in text and "rows 1-405" in text
    assert _dia(answered, "--question", "nope")[0] == 1  # not found: a failed lookup, not usage
    code, text = _dia(answered, "nope")
    assert code == 1 and "no table 'nope'" in text and "Traceback" not in text
    code, text = _dia(answered, "staff.nope")
    assert code == 1 and "staff has no column 'nope'" in text
    assert _dia(answered, "staff", "--value", "x")[0] == 2  # --value needs a column
    code, text = _dia(answered, "staff.role", "--json")  # one JSON document: origin and readers
    assert code == 0 and [r["question_id"] for r in json.loads(text)["readers"]] == ["roles"]
    code, text = _dia(answered, "-q", "roles")  # the deprecated `-q ID` still works, with a warning
    assert code == 0 and "| role | staff.role |" in text and "deprecated" in text


def test_lineage_report_asset(answered: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dia_assets.dagster.lineage import lineage_report
    from dia_assets.dagster.resources import WorkspaceResource
    from dia_assets.dagster.resources.warehouse import duckdb_resource

    monkeypatch.setenv("DIA_WORKSPACE", str(answered))
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    result = materialize([lineage_report], resources={"workspace": WorkspaceResource(),
                                                      "duckdb": duckdb_resource()},
                         selection=["lineage_report"])
    assert result.success
    meta = result.asset_materializations_for_node("lineage_report")[0].metadata
    assert "| staff | staff.csv |" in meta["tables_and_files"].value
    assert "roles: How many paid staff per role?" in meta["answers_and_reads"].value
    assert "| role | VARCHAR | role |" in meta["columns/staff"].value and "| roles |" in meta["columns/staff"].value
    index = LineageIndex.read(answered / "lineage" / "lineage.json")
    assert index.version == 1 and [a.question_id for a in index.readers("staff", "role")] == ["roles"]
    assert index.table("payroll").row_range.rows == duckdb.connect(
        str(answered / "warehouse.duckdb"), read_only=True).execute("SELECT count(*) FROM staging.payroll").fetchone()[0]


def test_query_result_metadata_names_what_the_sql_read(answered: Path) -> None:
    from dia_assets.contracts.query_result import QueryResult
    from dia_assets.dagster.question_metadata import result_metadata

    meta = result_metadata(QueryResult.read(answered / "queries" / "roles" / "result.json"))
    assert meta["dia/tables_read"].value == {"staff": ["hourly_rate", "role"]}
