"""Benchmark: Query Generator overhead with a scripted fake model.

Two figures, both with the same code path `dia ask` and the `query_result` asset use
(litellm tool calling, a fake provider registered with litellm):

* agent overhead per question excluding model time: probes, schema search, memory recall
  and pull-with-verification, sqlglot checks, execution, componentwise verification,
  lineage, transpilation. Measured over the example questions on the example warehouse
  (built from examples/data into a temporary folder, or `--warehouse` for one the Schema
  Creator built), after one warm-up pass. The schema
  index is built once per warehouse and reported separately. Target: p50 <= 150 ms.
* the first prompt (system + user + tool schemas, counted with litellm's token counter for
  gpt-4o) for a generated 50-table schema, with schema linking, and for comparison the same
  prompt listing every table. Target: under 8,000 tokens.

Run:
    .venv/bin/python bench/agent.py [--repeat N] [--warehouse dia_workspace/warehouse.duckdb]

The last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dia_assets.agents.evaluation.example_warehouses import (  # noqa: E402
    build_example_warehouse,
    generated_schema,
)
from dia_assets.agents.query import (  # noqa: E402
    AgentSettings,
    InMemoryMemory,
    Item,
    QueryAgent,
    SchemaIndex,
    load_questions,
    open_database,
)
from dia_assets.agents.query.tools import AGENT_TOOLS, tool_specs  # noqa: E402
from dia_assets.platform.model.litellm import litellm_chat, register_scripted, token_count  # noqa: E402
from dia_assets.platform.model.scripted import FAKE_MODEL, ScriptedModel, Step, call  # noqa: E402
from dia_assets.platform.workspace import Workspace  # noqa: E402

OVERHEAD_P50_MAX_MS = 150.0


def register_tools(steps: list[Step]) -> ScriptedModel:
    """The scripted agent, served as `fake/*` through the model door."""
    return register_scripted(ScriptedModel(steps))


PROMPT_TOKENS_MAX = 8000


def _c(columns, keys, order=None, filters=None):  # noqa: ANN001, ANN202
    return {"columns": columns, "granularity": {"description": ", ".join(keys), "key_columns": keys},
            "order": [{"column": c, "direction": d} for c, d in (order or [])], "filters": filters or []}


# question id -> (schema search term, probe SQL, contract, answer SQL)
PLANS = {
    "staff_count_per_role": (
        "role", "SELECT DISTINCT role FROM staff",
        _c(["role", "staff_count"], ["role"], [("staff_count", "desc")]),
        "SELECT role, COUNT(*) AS staff_count FROM staff GROUP BY role ORDER BY staff_count DESC"),
    "average_hourly_rate_per_department": (
        "hourly rate", "SELECT MIN(hourly_rate), MAX(hourly_rate), COUNT(*) FILTER (WHERE hourly_rate IS NULL) FROM staff",
        _c(["department_code", "avg_hourly_rate"], ["department_code"], [("department_code", "asc")]),
        "SELECT department_code, ROUND(AVG(hourly_rate), 2) AS avg_hourly_rate FROM staff GROUP BY 1 ORDER BY 1"),
    "total_fte_per_department": (
        "fte", "SELECT fte, COUNT(*) FROM staff GROUP BY 1",
        _c(["department_code", "total_fte"], ["department_code"], [("department_code", "asc")]),
        "SELECT department_code, SUM(fte) AS total_fte FROM staff GROUP BY 1 ORDER BY 1"),
    "beds_per_department": (
        "beds", "SELECT department_code, COUNT(*) FROM hospital_wards GROUP BY 1",
        _c(["department_code", "beds"], ["department_code"], [("department_code", "asc")]),
        "SELECT department_code, SUM(beds) AS beds FROM hospital_wards GROUP BY 1 ORDER BY 1"),
    "department_heads": (
        "head", "SELECT head_badge FROM hospital_departments LIMIT 3",
        _c(["department_code", "head_name", "building"], ["department_code"], [("department_code", "asc")]),
        "SELECT d.department_code, s.first_name || ' ' || s.last_name AS head_name, d.building "
        "FROM hospital_departments d JOIN staff s ON s.badge = d.head_badge ORDER BY 1"),
    "staff_hired_per_year": (
        "hire", "SELECT MIN(hire_date), MAX(hire_date) FROM staff",
        _c(["hire_year", "staff_count"], ["hire_year"], [("hire_year", "asc")]),
        "SELECT EXTRACT(year FROM hire_date) AS hire_year, COUNT(*) AS staff_count FROM staff GROUP BY 1 ORDER BY 1"),
    "completed_shifts_per_month": (
        "status", "SELECT status, COUNT(*) FROM shifts GROUP BY 1",
        _c(["month", "completed_shifts"], ["month"], [("month", "asc")],
           [{"description": "completed", "column": "status", "value": "completed"},
            {"description": "2026", "column": "shift_date"}]),
        "SELECT strftime(shift_date, '%Y-%m') AS month, COUNT(*) AS completed_shifts FROM shifts "
        "WHERE status = 'completed' AND shift_date >= DATE '2026-01-01' GROUP BY 1 ORDER BY 1"),
    "cancelled_shift_rate_per_ward": (
        "ward", "SELECT DISTINCT status FROM shifts",
        _c(["department_code", "ward_no", "cancelled_share"], ["department_code", "ward_no"],
           [("department_code", "asc"), ("ward_no", "asc")]),
        "SELECT department_code, ward_no, AVG(CASE WHEN status = 'cancelled' THEN 1.0 ELSE 0 END) AS cancelled_share "
        "FROM shifts GROUP BY 1, 2 ORDER BY 1, 2"),
    "night_shifts_per_department": (
        "start time", "SELECT start_time, COUNT(*) FROM shifts GROUP BY 1",
        _c(["department_code", "night_shifts"], ["department_code"], [("department_code", "asc")],
           [{"description": "starting at 23:00", "column": "start_time", "value": "23:00"}]),
        "SELECT department_code, COUNT(*) AS night_shifts FROM shifts WHERE start_time = '23:00' "
        "AND shift_date BETWEEN DATE '2026-01-01' AND DATE '2026-12-31' GROUP BY 1 ORDER BY 1"),
    "average_staff_per_completed_shift": (
        "assignments", "SELECT COUNT(*), COUNT(DISTINCT shift_id) FROM shifts_assignments",
        _c(["department_code", "avg_staff"], ["department_code"], [("department_code", "asc")],
           [{"description": "completed", "column": "status", "value": "completed"}]),
        "WITH c AS (SELECT s.shift_id, s.department_code, COUNT(*) AS n FROM shifts s "
        "JOIN shifts_assignments a ON a.shift_id = s.shift_id WHERE s.status = 'completed' GROUP BY 1, 2) "
        "SELECT department_code, AVG(n) AS avg_staff FROM c GROUP BY 1 ORDER BY 1"),
    "overtime_hours_by_department_q3_2026": (
        "overtime", "SELECT DISTINCT period FROM payroll ORDER BY 1",
        _c(["department_code", "overtime_hours"], ["department_code"], [("department_code", "asc")],
           [{"description": "Q3 2026", "column": "period", "value": ["2026-07", "2026-09"]}]),
        "SELECT s.department_code, SUM(p.overtime_hours) AS overtime_hours FROM payroll p "
        "JOIN staff s ON s.badge = p.badge WHERE p.period BETWEEN '2026-07' AND '2026-09' GROUP BY 1 ORDER BY 1"),
    "payroll_total_per_month": (
        "gross pay", "SELECT period, COUNT(*) FROM payroll GROUP BY 1",
        _c(["period", "total_gross_pay"], ["period"], [("period", "asc")]),
        "SELECT period, SUM(gross_pay) AS total_gross_pay FROM payroll GROUP BY 1 ORDER BY 1"),
}


def _memory() -> InMemoryMemory:
    return InMemoryMemory([
        Item("m1", "Count staff through shift assignments with COUNT(DISTINCT badge)",
             "shifts_assignments repeats a badge once per shift.",
             "SELECT COUNT(*) > COUNT(DISTINCT badge) FROM shifts_assignments", "aggregation"),
        Item("m2", "Shift status values are lower case after loading",
             "Filter with status = 'completed' or 'cancelled'.",
             "SELECT COUNT(*) > 0 FROM shifts WHERE status IN ('completed', 'cancelled')", "filter"),
    ])


def script(qid: str, question: str) -> list:
    term, probe, contract, sql = PLANS[qid]
    return [
        call("declare_contract", kind="analytical", **contract),
        call("search_schema", term=term),
        call("recall", query=question),
        call("read_memory", id="m2"),
        call("probe", sql=probe),
        call("submit", sql=sql),
        "no lesson",
    ]


def bench_overhead(repeat: int, warehouse: str | None = None) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="dia_bench_agent_"))
    # --warehouse: e.g. dia_workspace/warehouse.duckdb built by the Schema Creator
    wh = Path(warehouse) if warehouse else build_example_warehouse(Workspace(folder).warehouse)
    manifest = SchemaIndex.load_manifest(Workspace(wh.parent).manifest)
    db = open_database(wh)
    t0 = time.perf_counter()
    index = SchemaIndex.build(db, manifest=manifest)
    index_ms = (time.perf_counter() - t0) * 1000
    questions = [q for q in load_questions(ROOT / "examples" / "data" / "questions.yaml") if q["id"] in PLANS]
    chat = litellm_chat(FAKE_MODEL)
    samples, answered, failed = [], 0, []
    for round_ in range(repeat + 1):  # round 0 warms up imports and caches
        for q in questions:
            register_tools(script(q["id"], q["question"]))
            agent = QueryAgent(db, index, chat, memory=_memory(), settings=AgentSettings())
            run = agent.answer(q["question"], q["id"])
            if round_ == 0:
                if run.result.status != "answered":
                    failed.append((q["id"], run.trace["failures"]))
                continue
            answered += run.result.status == "answered"
            samples.append(run.result.overhead_s * 1000)
    db.close()
    shutil.rmtree(folder, ignore_errors=True)
    samples.sort()
    return {
        "questions": len(questions), "runs": len(samples), "answered": answered,
        "overhead_ms_p50": round(statistics.median(samples), 1),
        "overhead_ms_p90": round(samples[int(0.9 * (len(samples) - 1))], 1),
        "overhead_ms_max": round(samples[-1], 1),
        "schema_index_build_ms": round(index_ms, 1),
        "failed_in_warmup": failed,
    }


def bench_prompt(tables: int = 50) -> dict:
    folder = Path(tempfile.mkdtemp(prefix="dia_bench_schema_"))
    db = open_database(generated_schema(folder / "wide.duckdb", tables=tables))
    index = SchemaIndex.build(db)
    question = "What is the total invoice amount per customer region for closed invoices?"
    fake = register_tools([call("declare_contract", kind="analytical", columns=["x"]), "done"])
    agent = QueryAgent(db, index, litellm_chat(FAKE_MODEL), settings=AgentSettings(max_turns=1, reflect=False))
    answered = agent.answer(question, "wide")
    first = fake.requests[0]["messages"]
    tools = tool_specs(AGENT_TOOLS)
    linked = token_count(first, tools)
    every = QueryAgent(db, index, litellm_chat(FAKE_MODEL),
                       settings=AgentSettings(link_tables=len(index.tables), link_budget_tokens=None))
    unlinked = token_count(every.opening(every.start(question)), tools)
    db.close()
    shutil.rmtree(folder, ignore_errors=True)
    return {"tables": len(index.tables), "linked_tables": next(e["linked_tables"] for e in answered.trace["events"] if e["event"] == "start"),
            "prompt_tokens_linked": linked, "prompt_tokens_all_tables": unlinked}


LINK_RECALL_MIN = 0.98
LINK_TOKENS_MAX = 4000
LINK_MIN_TABLES = 80


def bench_linking(datasets: Path) -> dict:
    """Schema linking, as bench/linking.py measures it (original names; its own run adds the
    renamed variants): the tables each gold query reads against the tables the prompt carries."""
    from bench.linking import run_bench

    out = run_bench(datasets, None, seeds=0, distractors=50)
    o = out["original"]
    return {"link_tables": o["tables"], "link_questions": o["questions"], "link_recall": o["recall"],
            "link_questions_fully_linked": o["fully_linked"], "link_prompt_tokens_p50": o["prompt_tokens_p50"],
            "link_prompt_tokens_max": o["prompt_tokens_max"], "link_missed": o["missed"][:20],
            "link_warehouses": out["warehouse"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="timed passes over the questions")
    parser.add_argument("--warehouse", help="an example warehouse built by the Schema Creator (its "
                        "schema/manifest.json is read too); default: built from examples/data here")
    parser.add_argument("--datasets", default=str(ROOT.parent / "shared" / "datasets"),
                        help="the development datasets, for the schema-linking measurement")
    parser.add_argument("--only-linking", action="store_true", help="measure schema linking only")
    args = parser.parse_args()
    linking = bench_linking(Path(args.datasets))
    print(f"schema linking over {linking['link_tables']} tables side by side, {linking['link_questions']} "
          f"gold queries: recall {linking['link_recall']} ({linking['link_questions_fully_linked']} fully linked), "
          f"first prompt p50 {linking['link_prompt_tokens_p50']} / max {linking['link_prompt_tokens_max']} tokens "
          f"(targets: recall >= {LINK_RECALL_MIN}, <= {LINK_TOKENS_MAX} tokens, >= {LINK_MIN_TABLES} tables)")
    link_met = (linking["link_recall"] >= LINK_RECALL_MIN and linking["link_prompt_tokens_max"] <= LINK_TOKENS_MAX
                and linking["link_tables"] >= LINK_MIN_TABLES)
    if args.only_linking:
        print(json.dumps({"bench": "agent-linking", "figures": linking,
                          "targets": {"link_recall_min": LINK_RECALL_MIN, "link_prompt_tokens_max": LINK_TOKENS_MAX,
                                      "link_min_tables": LINK_MIN_TABLES}, "met": link_met}))
        return 0
    overhead = bench_overhead(args.repeat, args.warehouse)
    print(f"agent overhead per question (excluding model time), {overhead['runs']} runs over "
          f"{overhead['questions']} questions: p50 {overhead['overhead_ms_p50']} ms, "
          f"p90 {overhead['overhead_ms_p90']} ms, max {overhead['overhead_ms_max']} ms "
          f"(target p50 <= {OVERHEAD_P50_MAX_MS:g} ms); answered {overhead['answered']}/{overhead['runs']}; "
          f"schema index built once in {overhead['schema_index_build_ms']} ms")
    prompt = bench_prompt()
    print(f"first prompt for a generated {prompt['tables']}-table schema: {prompt['prompt_tokens_linked']} tokens "
          f"with schema linking ({len(prompt['linked_tables'])} tables: {', '.join(prompt['linked_tables'])}), "
          f"{prompt['prompt_tokens_all_tables']} tokens listing every table (target < {PROMPT_TOKENS_MAX})")
    met = (overhead["overhead_ms_p50"] <= OVERHEAD_P50_MAX_MS and prompt["prompt_tokens_linked"] < PROMPT_TOKENS_MAX
           and overhead["answered"] == overhead["runs"] and link_met)
    print(json.dumps({
        "bench": "agent",
        "figures": {**{k: v for k, v in overhead.items() if k != "failed_in_warmup"}, **prompt, **linking},
        "targets": {"overhead_ms_p50_max": OVERHEAD_P50_MAX_MS, "prompt_tokens_max": PROMPT_TOKENS_MAX,
                    "all_answered": True, "link_recall_min": LINK_RECALL_MIN,
                    "link_prompt_tokens_max": LINK_TOKENS_MAX, "link_min_tables": LINK_MIN_TABLES},
        "met": met,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
