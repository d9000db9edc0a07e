"""A stand-in for the bundled sample's warehouse (`examples/eval/questions.jsonl`), for tests.

`build_sample_warehouse` loads `examples/data` into DuckDB the way the Schema Creator's refined
tables look with `examples/data/overrides.yaml` applied (same table and column names, typed
columns, duplicate staff rows dropped, canonical role and status spellings, unparseable hourly
rates as NULL). It exists so the gold SQL can be written and checked by execution before (and
independently of) the Schema Creator; `canonical=False` keeps the raw spellings and
`dedupe=False` keeps the duplicate rows, to check that the gold SQL does not depend on either.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data"
SAMPLE_QUESTIONS = ROOT / "examples" / "eval" / "questions.jsonl"

ROLE_CANONICAL = {
    "registered nurse": "Registered Nurse", "Registered  Nurse ": "Registered Nurse", "RN": "Registered Nurse",
    "healthcare assistant": "Healthcare Assistant", "HEALTHCARE ASSISTANT": "Healthcare Assistant",
    "junior doctor": "Junior Doctor", "Consultant ": "Consultant", "ward clerk": "Ward Clerk",
}
NULL_TOKENS = {"", "-", "NULL", "N/A"}


def _staff(dedupe: bool, canonical: bool) -> Any:
    import pandas as pd

    text = (DATA / "staff.csv").read_bytes().decode("cp1252")
    from io import StringIO

    df = pd.read_csv(StringIO(text), sep=";", dtype=str, keep_default_na=False)
    if dedupe:
        df = df.drop_duplicates()
    if canonical:
        df["role"] = df["role"].map(lambda r: ROLE_CANONICAL.get(r, r))
    for col in ("email", "phone", "postal_code"):
        df[col] = df[col].map(lambda v: None if v.strip() in NULL_TOKENS else v)
    return df


def build_sample_warehouse(path: str | Path, *, canonical: bool = True, dedupe: bool = True) -> Path:
    """A DuckDB file with the six refined tables of the example data."""
    import duckdb
    import pandas as pd

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.exists():
        path.unlink()
    staff_raw = _staff(dedupe, canonical)
    lines = [json.loads(x) for x in (DATA / "shifts.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    shifts_raw = pd.DataFrame([{
        **{k: v for k, v in s.items() if k not in ("assignments", "meta")},
        "meta_created_by": (s.get("meta") or {}).get("created_by"),
        "meta_created_at": (s.get("meta") or {}).get("created_at"),
        "meta_source_system": (s.get("meta") or {}).get("source_system"),
    } for s in lines])
    assign_raw = pd.DataFrame([{"shift_id": s["shift_id"], "ordinal": i, **a}
                               for s in lines for i, a in enumerate(s.get("assignments") or [], 1)])
    dept_raw = pd.read_excel(DATA / "hospital.xlsx", sheet_name="departments", header=2)
    ward_raw = pd.read_excel(DATA / "hospital.xlsx", sheet_name="wards")
    pay_raw = pd.read_parquet(DATA / "payroll.parquet")
    status = "CASE lower(trim(status)) WHEN 'completed' THEN 'completed' WHEN 'cancelled' THEN 'cancelled' ELSE status END" \
        if canonical else "status"
    con = duckdb.connect(str(path))
    try:
        for name, frame in {"staff_raw": staff_raw, "shifts_raw": shifts_raw, "assign_raw": assign_raw,
                            "dept_raw": dept_raw, "ward_raw": ward_raw, "pay_raw": pay_raw}.items():
            con.register(name, frame)
        con.execute("""CREATE TABLE staff AS SELECT badge, first_name, last_name, role, department_code,
            COALESCE(TRY_CAST(hire_date AS DATE), TRY_STRPTIME(hire_date, '%d/%m/%Y')::DATE,
                     TRY_STRPTIME(hire_date, '%-d %b %Y')::DATE) AS hire_date,
            TRY_CAST(replace(hourly_rate, ',', '.') AS DECIMAL(10, 2)) AS hourly_rate,
            CAST(replace(fte, ',', '.') AS DECIMAL(4, 2)) AS fte,
            email, phone, postal_code FROM staff_raw""")
        con.execute(f"""CREATE TABLE shifts AS SELECT CAST(shift_id AS INTEGER) AS shift_id, department_code,
            CAST(ward_no AS INTEGER) AS ward_no, CAST(shift_date AS DATE) AS shift_date,
            CAST(start_time AS TIME) AS start_time, CAST(end_time AS TIME) AS end_time,
            {status} AS status, notes, meta_created_by,
            CAST(meta_created_at AS TIMESTAMP) AS meta_created_at, meta_source_system FROM shifts_raw""")
        con.execute("""CREATE TABLE shifts_assignments AS SELECT CAST(shift_id AS INTEGER) AS shift_id,
            CAST(ordinal AS INTEGER) AS ordinal, badge, role_on_shift, CAST(hours AS DOUBLE) AS hours,
            CAST(overtime AS BOOLEAN) AS overtime FROM assign_raw""")
        con.execute("""CREATE TABLE hospital_departments AS SELECT department_code, department_name, building,
            CAST(floor AS INTEGER) AS floor, head_badge, CAST(annual_budget AS BIGINT) AS annual_budget FROM dept_raw""")
        con.execute("""CREATE TABLE hospital_wards AS SELECT department_code, CAST(ward_no AS INTEGER) AS ward_no,
            ward_name, CAST(beds AS INTEGER) AS beds, CAST(opened_on AS DATE) AS opened_on FROM ward_raw""")
        con.execute("""CREATE TABLE payroll AS SELECT badge, period, base_hours, overtime_hours,
            CAST(replace(replace(gross_pay, '$', ''), ',', '') AS DECIMAL(12, 2)) AS gross_pay,
            CAST(paid_on AS DATE) AS paid_on FROM pay_raw""")
    finally:
        con.close()
    return path


def check_gold(questions: str | Path, warehouse: str | Path, timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """Execute every gold query of a question set on one database: one row per gold query
    with its row count, columns, and error (None when it ran)."""
    from dia_assets.agents.evaluation.databases import open_database
    from dia_assets.agents.evaluation.datasets import load_instances, transpile_gold

    out = []
    with open_database(warehouse) as db:
        for inst in load_instances(questions):
            for sql in inst.gold_sql:
                row: dict[str, Any] = {"id": inst.id, "error": None}
                try:
                    res = db.query(transpile_gold(sql, inst.dialect, db.dialect, db.column_types), timeout_s)
                    row.update(rows=len(res.rows), columns=res.columns, result=res.rows)
                except Exception as err:
                    row["error"] = f"{type(err).__name__}: {err}"
                out.append(row)
    return out


if __name__ == "__main__":  # python -m tests.eval_stand_in OUT.duckdb
    import sys

    target = Path(sys.argv[1] if len(sys.argv) > 1 else "dia_workspace/warehouse.duckdb")
    print(f"wrote {build_sample_warehouse(target)} (stand-in for the Schema Creator's warehouse)")
