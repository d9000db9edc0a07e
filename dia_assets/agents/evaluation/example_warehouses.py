"""Example and synthetic warehouses for the Query Generator's tests and benches, built with plain
SQL (no Schema Creator): the bundled hospital data close to what the Schema Creator produces, a
tiny portable schema for SQLite/PostgreSQL runs, and a wide generated schema for schema linking.
They live in the package so `bench/` needs nothing from `tests/`."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import duckdb

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "examples" / "data"


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
