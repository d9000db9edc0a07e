"""Helpers for the Query Generator tests: an example warehouse built straight from
examples/data (no Schema Creator), and a scripted tool-calling model registered with
litellm as provider `fake`.

A script is a list of steps, one per model call: `call("probe", sql=...)`, several calls
in one reply via `calls(call(...), call(...))`, plain text via `say("...")`, or a callable
`(messages) -> step` that looks at the conversation so far.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
import litellm  # noqa: E402
from litellm import CustomLLM, ModelResponse  # noqa: E402

litellm.suppress_debug_info = True
from litellm.types.utils import (  # noqa: E402
    ChatCompletionMessageToolCall,
    Choices,
    Function,
    Message,
    Usage,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data"
FAKE_MODEL = "fake/scripted"
PRICE_IN, PRICE_OUT = 1e-6, 4e-6  # USD per token, registered with litellm's cost map

Step = dict[str, Any] | list[dict[str, Any]] | str | Callable[[list[dict[str, Any]]], Any]


def call(tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"name": tool, "arguments": arguments}


def calls(*items: dict[str, Any]) -> list[dict[str, Any]]:
    return list(items)


def say(text: str) -> str:
    return text


class ScriptedToolModel(CustomLLM):
    """Replies with the next scripted step; records every request it was sent."""

    def __init__(self, steps: list[Step]) -> None:
        super().__init__()
        self.steps = list(steps)
        self.requests: list[dict[str, Any]] = []
        self._n = 0

    async def acompletion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        """The model door calls the async path; the script itself is synchronous."""
        return self.completion(*args, **kwargs)

    def completion(self, *args: Any, **kwargs: Any) -> ModelResponse:
        messages = kwargs.get("messages") or []
        self.requests.append({"messages": [dict(m) for m in messages], "tools": kwargs.get("optional_params", {}).get("tools")})
        step: Any = self.steps.pop(0) if self.steps else "no lesson"
        while callable(step):
            step = step(messages)
        prompt_tokens = sum(len(str(m.get("content") or "")) for m in messages) // 4 + 1
        if isinstance(step, str):
            message = Message(content=step, role="assistant")
            completion_tokens = len(step) // 4 + 1
            finish = "stop"
        else:
            items = step if isinstance(step, list) else [step]
            tool_calls = []
            for item in items:
                self._n += 1
                tool_calls.append(ChatCompletionMessageToolCall(
                    id=f"call_{self._n}", type="function",
                    function=Function(name=item["name"], arguments=json.dumps(item["arguments"])),
                ))
            message = Message(content=None, role="assistant", tool_calls=tool_calls)
            completion_tokens = sum(len(json.dumps(i)) for i in items) // 4 + 1
            finish = "tool_calls"
        return ModelResponse(
            model=FAKE_MODEL,
            choices=[Choices(index=0, finish_reason=finish, message=message)],
            usage=Usage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                        total_tokens=prompt_tokens + completion_tokens),
        )


def register_tools(steps: list[Step]) -> ScriptedToolModel:
    handler = ScriptedToolModel(steps)
    litellm.custom_provider_map = [{"provider": "fake", "custom_handler": handler}]
    litellm.utils.custom_llm_setup()
    return handler


# priced per token in litellm's cost map, so completion_cost works for the fake model
litellm.register_model({FAKE_MODEL: {
    "input_cost_per_token": PRICE_IN, "output_cost_per_token": PRICE_OUT,
    "cache_creation_input_token_cost": 0.0, "cache_read_input_token_cost": 0.0,
    "litellm_provider": "fake", "mode": "chat", "supports_function_calling": True,
}})


def last_tool_result(messages: list[dict[str, Any]]) -> str:
    for m in reversed(messages):
        if m.get("role") == "tool":
            return str(m.get("content"))
    return ""


def tool_results(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m.get("content")) for m in messages if m.get("role") == "tool"]


# -- the example warehouse ----------------------------------------------------------------------


def _staff_frame() -> Any:
    import pandas as pd

    df = pd.read_csv(DATA / "staff.csv", sep=";", encoding="cp1252", dtype=str, keep_default_na=False)
    return df.drop_duplicates()


def build_example_warehouse(path: Path) -> Path:
    """Refined tables of the bundled hospital data (plus `staging` and `rejects` schemas the
    agent must ignore), loaded with plain SQL: close to what the Schema Creator produces."""
    import pandas as pd

    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    staff = _staff_frame()  # noqa: F841 - read by DuckDB's replacement scan
    shifts_raw = [json.loads(line) for line in (DATA / "shifts.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]
    shifts = pd.DataFrame([{k: v for k, v in s.items() if k not in ("assignments", "meta")} for s in shifts_raw])  # noqa: F841
    assignments = pd.DataFrame([  # noqa: F841
        {"shift_id": s["shift_id"], **a} for s in shifts_raw for a in s.get("assignments") or []
    ])
    departments = pd.read_excel(DATA / "hospital.xlsx", sheet_name="departments", header=2)  # noqa: F841
    wards = pd.read_excel(DATA / "hospital.xlsx", sheet_name="wards")  # noqa: F841
    payroll = pd.read_parquet(DATA / "payroll.parquet")  # noqa: F841
    con = duckdb.connect(str(path))
    role_map = """CASE lower(regexp_replace(trim(role), '\\s+', ' ', 'g'))
        WHEN 'rn' THEN 'Registered Nurse' WHEN 'registered nurse' THEN 'Registered Nurse'
        WHEN 'healthcare assistant' THEN 'Healthcare Assistant' WHEN 'junior doctor' THEN 'Junior Doctor'
        WHEN 'consultant' THEN 'Consultant' WHEN 'ward clerk' THEN 'Ward Clerk'
        ELSE trim(role) END"""
    con.execute(f"""
        CREATE TABLE staff AS SELECT badge, first_name, last_name, {role_map} AS role,
          department_code,
          COALESCE(TRY_CAST(hire_date AS DATE), TRY_STRPTIME(hire_date, '%d/%m/%Y')::DATE,
                   TRY_STRPTIME(hire_date, '%-d %b %Y')::DATE) AS hire_date,
          TRY_CAST(replace(hourly_rate, ',', '.') AS DECIMAL(10, 2)) AS hourly_rate,
          CAST(replace(fte, ',', '.') AS DECIMAL(3, 2)) AS fte,
          NULLIF(trim(email), '') AS email, postal_code
        FROM staff""")
    con.execute("""CREATE TABLE hospital_departments AS SELECT department_code, department_name, building,
                   CAST(floor AS INTEGER) AS floor, head_badge, CAST(annual_budget AS DECIMAL(14, 2)) AS annual_budget
                   FROM departments""")
    con.execute("""CREATE TABLE hospital_wards AS SELECT department_code, CAST(ward_no AS INTEGER) AS ward_no,
                   ward_name, CAST(beds AS INTEGER) AS beds, CAST(opened_on AS DATE) AS opened_on FROM wards""")
    con.execute("""CREATE TABLE shifts AS SELECT CAST(shift_id AS INTEGER) AS shift_id, department_code,
                   CAST(ward_no AS INTEGER) AS ward_no, CAST(shift_date AS DATE) AS shift_date,
                   CAST(start_time AS TIME) AS start_time, CAST(end_time AS TIME) AS end_time,
                   lower(trim(status)) AS status, NULLIF(notes, '') AS notes FROM shifts""")
    con.execute("""CREATE TABLE shifts_assignments AS SELECT CAST(shift_id AS INTEGER) AS shift_id, badge,
                   role_on_shift, CAST(hours AS DOUBLE) AS hours, CAST(overtime AS BOOLEAN) AS overtime
                   FROM assignments""")
    con.execute("""CREATE TABLE payroll AS SELECT badge, period, base_hours, overtime_hours,
                   CAST(replace(replace(gross_pay, '$', ''), ',', '') AS DECIMAL(12, 2)) AS gross_pay,
                   CAST(paid_on AS DATE) AS paid_on FROM payroll""")
    con.execute("CREATE SCHEMA staging")
    con.execute("CREATE TABLE staging.staff AS SELECT * FROM staff")
    con.execute("CREATE SCHEMA rejects")
    con.execute("CREATE TABLE rejects.staff (badge VARCHAR, reason VARCHAR)")
    con.close()
    return path


def tiny_warehouse_sql() -> list[str]:
    """A tiny portable schema (staff, departments, shifts) for the SQLite/PostgreSQL runs."""
    return [
        "CREATE TABLE departments (department_code VARCHAR(8) PRIMARY KEY, department_name VARCHAR(40), building VARCHAR(20))",
        "CREATE TABLE staff (badge VARCHAR(8) PRIMARY KEY, first_name VARCHAR(40), last_name VARCHAR(40), role VARCHAR(40), department_code VARCHAR(8), hourly_rate DECIMAL(10,2))",
        "CREATE TABLE shifts (shift_id INTEGER PRIMARY KEY, department_code VARCHAR(8), shift_date DATE, status VARCHAR(12), notes VARCHAR(200))",
        "INSERT INTO departments VALUES ('ICU', 'Intensive Care', 'North'), ('CARD', 'Cardiology', 'East')",
        "INSERT INTO staff VALUES ('B1', 'Ana', 'Lee', 'Registered Nurse', 'ICU', 40.5), ('B2', 'Bo', 'Kim', 'Consultant', 'ICU', 95.0),"
        " ('B3', 'Cy', 'Ng', 'Registered Nurse', 'CARD', 42.0), ('B4', 'Di', 'Oz', 'Ward Clerk', 'CARD', 21.0)",
        "INSERT INTO shifts VALUES (1, 'ICU', '2026-01-01', 'completed', NULL), (2, 'ICU', '2026-01-02', 'cancelled', NULL),"
        " (3, 'CARD', '2026-01-01', 'completed', NULL)",
    ]


def build_sqlite(path: Path) -> Path:
    con = sqlite3.connect(path)
    for stmt in tiny_warehouse_sql():
        con.execute(stmt)
    con.commit()
    con.close()
    return path


def build_tiny_duckdb(path: Path) -> Path:
    con = duckdb.connect(str(path))
    for stmt in tiny_warehouse_sql():
        con.execute(stmt)
    con.close()
    return path


def generated_schema(path: Path, tables: int = 50, rows: int = 200) -> Path:
    """A wide synthetic warehouse (the schema-linking benchmark): `tables` tables of 15-20
    columns over unrelated business domains."""
    domains = ["invoice", "customer", "supplier", "product", "warehouse", "shipment", "employee",
               "payment", "contract", "campaign", "ticket", "asset", "vehicle", "route", "claim",
               "policy", "account", "budget", "project", "timesheet", "device", "sensor", "lease",
               "tenant", "course", "student", "exam", "grade", "patient", "visit", "lab_result",
               "prescription", "sales_order", "product_return", "refund", "coupon", "store", "region", "forecast",
               "audit", "risk", "incident", "license", "vendor", "quote", "bid", "tender", "grant",
               "donation", "event"]
    con = duckdb.connect(str(path))
    for i in range(tables):
        name = domains[i % len(domains)] + ("" if i < len(domains) else f"_{i}")
        cols = [f"{name}_id INTEGER", "status VARCHAR", "created_on DATE", "amount DECIMAL(12,2)",
                "category VARCHAR", "owner_name VARCHAR", f"{domains[(i + 1) % len(domains)]}_id INTEGER",
                "region_code VARCHAR", "notes VARCHAR"] + [f"{name}_metric_{k} DOUBLE" for k in range(6 + i % 6)]
        con.execute(f"CREATE TABLE {name} ({', '.join(cols)})")
        extra = ", ".join("random()" for _ in range(6 + i % 6))
        con.execute(
            f"INSERT INTO {name} SELECT r, ['open','closed','pending'][1 + r % 3], DATE '2026-01-01' + CAST(r AS INTEGER), "
            f"r * 1.5, ['a','b','c','d'][1 + r % 4], 'owner ' || (r % 17), r % 50, "
            f"['N','S','E','W'][1 + r % 4], 'note ' || r {', ' + extra if extra else ''} FROM range({rows}) t(r)"
        )
    con.close()
    return path


def strip_ws(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
