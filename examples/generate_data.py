"""Generate DIA's bundled example data: a hospital's HR / rostering / payroll export.

Deterministic (``random.Random(42)``): running it twice writes byte-identical files.
Writes the sources into ``examples/data/`` plus ``examples/data/README.md`` and the
machine-readable ground truth ``examples/truth.json``. It records every problem it
plants, then re-reads the written files and asserts that the counts match.

    python examples/generate_data.py
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import random
import re
import unicodedata
import zipfile
from collections import Counter
from dataclasses import dataclass
from itertools import cycle
from pathlib import Path
from typing import Any

import openpyxl
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
OUT = HERE / "data"
EXPORTED = dt.date(2026, 10, 1)
FIRST_DAY, LAST_DAY = dt.date(2026, 1, 1), dt.date(2026, 9, 30)
PERIODS = [f"2026-{m:02d}" for m in range(1, 10)]
STD_HOURS = 7.5  # paid hours of a standard shift (8 h minus a 30 min unpaid break)
MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
N_STAFF, N_SHIFTS, N_DUPLICATES, N_ORPHAN_ASSIGNMENTS = 400, 2500, 5, 8
NULL_TOKENS = ("N/A", "-", "NULL")
STATUSES = ("completed", "cancelled")

DEPARTMENTS = [  # code, name, building, floor, annual budget (USD), wards
    ("CARD", "Cardiology", "North Wing", 2, 8_450_000, 3),
    ("EMER", "Emergency Medicine", "Main Block", 0, 11_200_000, 2),
    ("ICU", "Intensive Care", "Main Block", 1, 9_750_000, 2),
    ("ONCO", "Oncology", "South Wing", 3, 7_900_000, 3),
    ("PAED", "Paediatrics", "South Wing", 1, 5_600_000, 2),
    ("MATY", "Maternity", "South Wing", 2, 6_100_000, 2),
    ("ORTH", "Orthopaedics", "North Wing", 3, 6_800_000, 3),
    ("NEUR", "Neurology", "North Wing", 4, 4_950_000, 2),
    ("RESP", "Respiratory Medicine", "Tower B", 2, 4_300_000, 2),
    ("GAST", "Gastroenterology", "Tower B", 3, 3_900_000, 2),
    ("SURG", "General Surgery", "Main Block", 2, 10_400_000, 4),
    ("GERI", "Elderly Care", "Tower B", 1, 5_200_000, 3),
]
WARD_NAMES = [
    "Nightingale", "Seacole", "Fleming", "Lister", "Jenner", "Curie", "Barton", "Cavell", "Florey",
    "Harvey", "Hodgkin", "Osler", "Pasteur", "Salk", "Snow", "Apgar", "Blackwell", "Anderson",
    "Franklin", "Hunter", "Laennec", "Paré", "Röntgen", "Semmelweis", "Vesalius", "Banting",
    "Addison", "Bright", "Parkinson", "Alzheimer"
]
# canonical role -> (weight, hourly rate range in USD, spellings seen in the HR export)
ROLES: dict[str, tuple[int, tuple[int, int], list[str]]] = {
    "Registered Nurse": (40, (32, 44), ["registered nurse", "Registered  Nurse ", "RN"]),
    "Healthcare Assistant": (18, (18, 24), ["healthcare assistant", "HEALTHCARE ASSISTANT"]),
    "Junior Doctor": (10, (30, 45), ["junior doctor"]),
    "Consultant": (8, (85, 120), ["Consultant "]),
    "Physiotherapist": (5, (30, 40), []),
    "Pharmacist": (3, (38, 50), []),
    "Radiographer": (4, (32, 42), []),
    "Ward Clerk": (6, (17, 22), ["ward clerk"]),
    "Porter": (6, (16, 20), []),
}
FIRST_NAMES = [
    "José", "Zoë", "Chloé", "Renée", "François", "Jürgen", "Björn", "Inés", "Agnès", "Léa", "Noël",
    "María", "Søren", "Ana", "James", "Mary", "Robert", "Linda", "Michael", "Sarah", "David",
    "Emily", "Daniel", "Grace", "Thomas", "Aisha", "Wei", "Priya", "Omar", "Fatima", "Liam",
    "Olivia", "Noah", "Emma", "Lucas", "Sophie", "Mateo", "Hannah", "Kofi", "Yuki", "Anjali",
    "Patrick", "Siobhán"
]
LAST_NAMES = [
    "Müller", "García", "Núñez", "O'Brien", "Lefèvre", "Schröder", "Dubois", "Søndergaard", "Peña",
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Miller", "Davis", "Wilson", "Anderson",
    "Taylor", "Thomas", "Moore", "Martin", "Lee", "Walker", "Hall", "Young", "King", "Wright",
    "Lopez", "Hill", "Scott", "Green", "Adams", "Baker", "Nguyen", "Patel", "Kim", "Chen",
    "Okafor", "Murphy", "Kelly", "Rossi", "Novak", "Andersson", "Fischer", "Weiß", "Gonçalves",
    "Brennan", "Sullivan"
]
SLOTS = [("07:00", "15:00"), ("15:00", "23:00"), ("23:00", "07:00")]
STATUS_VARIANTS = {"completed": ["Completed", "COMPLETED ", "Completed "],
                   "cancelled": ["Cancelled", "CANCELLED"]}
NOTES = ["Covered by bank staff", "Short-staffed, escalated to matron", "Agency nurse booked",
         "Ward closed to admissions", "Swapped with late shift"]
Planted = Counter[tuple[str, str, str | None]]  # (kind, source, column) -> count


@dataclass
class Staff:
    badge: str
    first: str
    last: str
    role: str
    dept: str
    hired: dt.date
    rate: float
    fte: float


def make_staff(rng: random.Random) -> tuple[list[Staff], list[tuple[Staff, int]]]:
    """400 current staff (one consultant per department first, to head it) and three
    former staff (with the last month they were paid) who are missing from the export."""
    numbers = rng.sample(range(100, 10_000), N_STAFF + 3)
    span = (dt.date(2026, 6, 30) - dt.date(2004, 1, 1)).days
    people = []
    for i, n in enumerate(numbers):
        role = "Consultant" if i < len(DEPARTMENTS) else rng.choices(
            list(ROLES), [w for w, _, _ in ROLES.values()])[0]
        dept = DEPARTMENTS[i][0] if i < len(DEPARTMENTS) else rng.choices(
            [d[0] for d in DEPARTMENTS], [d[5] for d in DEPARTMENTS])[0]
        lo, hi = ROLES[role][1]
        hired = dt.date(2004, 1, 1) + dt.timedelta(rng.randrange(span))
        if i < len(DEPARTMENTS) or i >= N_STAFF:
            hired = hired.replace(year=min(hired.year, 2018))
        people.append(Staff(f"B{n:05d}", rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES), role,
                            dept, hired, round(rng.uniform(lo, hi), 2),
                            rng.choice([1.0] * 6 + [0.8, 0.8, 0.6, 0.5])))
    return people[:N_STAFF], [(s, m) for s, m in zip(people[N_STAFF:], (1, 2, 3), strict=True)]


def staff_rows(rng: random.Random, staff: list[Staff], planted: Planted) -> list[list[str]]:
    """Raw CSV rows as the HR system writes them, with the planted problems."""
    emails: Counter[str] = Counter()
    unparseable = dict(zip(rng.sample(range(N_STAFF), 2), ["tbd", "see contract"], strict=True))
    rows, clean = [], []
    role_variants = {role: cycle(spec[2]) for role, spec in ROLES.items()}
    for i, s in enumerate(sorted(staff, key=lambda p: (p.last, p.first, p.badge))):
        before = sum(planted.values())
        role, variants = s.role, ROLES[s.role][2]
        if variants and rng.random() < 0.08:
            role = next(role_variants[s.role])  # cycle, so every spelling occurs
            planted["inconsistent_categories", "staff", "role"] += 1
        r = rng.random()
        hired = s.hired.isoformat()
        if r > 0.78:
            planted["mixed_formats", "staff", "hire_date"] += 1
            hired = (s.hired.strftime("%d/%m/%Y") if r < 0.90
                     else f"{s.hired.day} {MONTHS[s.hired.month - 1]} {s.hired.year}")
        rate = f"{s.rate:.2f}".replace(".", ",")
        if i in unparseable:
            rate = unparseable[i]
            planted["unparseable_values", "staff", "hourly_rate"] += 1
        ascii_name = unicodedata.normalize("NFKD", f"{s.first}.{s.last}").encode("ascii", "ignore")
        local = re.sub(r"[^a-z.]", "", ascii_name.decode().lower())
        emails[local] += 1
        email = f"{local}{emails[local] if emails[local] > 1 else ''}@stmarys-general.example.org"
        phone = f"({rng.choice(['617', '857', '781', '508'])}) 555-{rng.randrange(100, 200):04d}"
        postal = rng.choice(["021", "024", "019", "018", "017", "023", "027"])
        postal += f"{rng.randrange(100):02d}"
        values = {"email": email, "phone": phone, "postal_code": postal}
        for col, p_blank, p_token in (("email", 0.015, 0.0), ("phone", 0.03, 0.04),
                                      ("postal_code", 0.0, 0.01)):
            r = rng.random()
            if r < p_blank:
                values[col] = " "  # a blank string, not an empty (NULL) field
                planted["blank_strings", "staff", col] += 1
            elif r < p_blank + p_token:
                values[col] = rng.choice(NULL_TOKENS)
                planted["null_tokens", "staff", col] += 1
        rows.append([s.badge, s.first, s.last, role, s.dept, hired, rate,
                     f"{s.fte:.1f}".replace(".", ","), *values.values()])
        if sum(planted.values()) == before:
            clean.append(rows[-1])
    for row in rng.sample(clean, N_DUPLICATES):  # exact copies of problem-free rows
        rows.insert(rng.randrange(len(rows) + 1), list(row))
        planted["duplicate_rows", "staff", None] += 1
    return rows


def make_wards(rng: random.Random) -> list[dict[str, Any]]:
    names = iter(rng.sample(WARD_NAMES, len(WARD_NAMES)))
    wards = []
    for code, *_, n_wards in DEPARTMENTS:
        for ward_no in range(1, n_wards + 1):
            beds = rng.randint(8, 14) if code == "ICU" else rng.randint(16, 32)
            opened = dt.date(rng.randint(1975, 2020), rng.randint(1, 12), 1)
            wards.append({"department_code": code, "ward_no": ward_no,
                          "ward_name": f"{next(names)} Ward", "beds": beds, "opened_on": opened,
                          "cancel_rate": rng.choice([0.02, 0.04, 0.06, 0.09, 0.14])})
    return wards


def make_shifts(rng: random.Random, staff: list[Staff], wards: list[dict[str, Any]],
                former: list[tuple[Staff, int]], planted: Planted) -> list[dict[str, Any]]:
    days = (LAST_DAY - FIRST_DAY).days + 1
    drafts = [(FIRST_DAY + dt.timedelta(rng.randrange(days)), rng.randrange(3),
               rng.choices(wards, [w["beds"] for w in wards])[0]) for _ in range(N_SHIFTS)]
    drafts.sort(key=lambda d: (d[0], d[1], d[2]["department_code"], d[2]["ward_no"]))
    shifts, status_variants = [], {k: cycle(v) for k, v in STATUS_VARIANTS.items()}
    for i, (day, slot, ward) in enumerate(drafts):
        cancelled = rng.random() < ward["cancel_rate"]
        status = STATUSES[cancelled]
        if rng.random() < 0.06:
            status = next(status_variants[status])
            planted["inconsistent_categories", "shifts", "status"] += 1
        pool = [s for s in staff if s.dept == ward["department_code"] and s.hired <= day]
        team = rng.sample(pool, min(len(pool), rng.choices(range(1, 6), [1, 3, 4, 3, 2])[0]))
        assignments = []
        for k, s in enumerate(team):
            overtime = not cancelled and rng.random() < 0.12
            extra = rng.choice([1.0, 1.5, 2.0, 2.5, 4.0]) if overtime else 0.0
            assignments.append({"badge": s.badge, "role_on_shift": "lead" if k == 0 else "rostered",
                                "hours": 0.0 if cancelled else STD_HOURS + extra,
                                "overtime": overtime})
        r, notes = rng.random(), None
        if r < 0.08:
            notes = "" if r < 0.03 else rng.choice(NOTES)
            planted["blank_strings", "shifts", "notes"] += notes == ""
        created = day - dt.timedelta(days=rng.randint(7, 28))
        shifts.append({
            "shift_id": 500_001 + i, "department_code": ward["department_code"],
            "ward_no": ward["ward_no"], "shift_date": day.isoformat(),
            "start_time": SLOTS[slot][0], "end_time": SLOTS[slot][1], "status": status,
            "notes": notes,
            "meta": {"created_by": rng.choice(["rota.admin", "k.brennan", "j.mueller", "import-bot"]),
                     "created_at": f"{created.isoformat()}T08:{rng.randrange(60):02d}:00Z",
                     "source_system": "RosterPro 7.2"},
            "assignments": assignments,
        })
    for k in range(N_ORPHAN_ASSIGNMENTS):  # former staff still on old rosters
        f, last_month = former[k % len(former)]
        candidates = [s for s in shifts if s["department_code"] == f.dept
                      and int(s["shift_date"][5:7]) <= last_month
                      and s["status"].strip().lower() == "completed"
                      and len(s["assignments"]) < 5
                      and f.badge not in {a["badge"] for a in s["assignments"]}]
        rng.choice(candidates)["assignments"].append(
            {"badge": f.badge, "role_on_shift": "rostered", "hours": STD_HOURS, "overtime": False})
        planted["orphan_foreign_keys", "shifts_assignments", "badge"] += 1
    return shifts


def payroll_table(staff: list[Staff], former: list[tuple[Staff, int]],
                  shifts: list[dict[str, Any]], planted: Planted) -> pa.Table:
    overtime: Counter[tuple[str, str]] = Counter()
    for shift in shifts:
        for a in shift["assignments"]:
            if a["overtime"]:
                overtime[a["badge"], shift["shift_date"][:7]] += a["hours"] - STD_HOURS
    rows = []
    for month, period in enumerate(PERIODS, start=1):
        paid_on = dt.date(2026, month, 25)
        paid_on -= dt.timedelta(days=max(0, paid_on.weekday() - 4))  # weekend -> Friday
        paid = [s for s in staff if (s.hired.year, s.hired.month) <= (2026, month)]
        gone = [f for f, last in former if month <= last]
        planted["orphan_foreign_keys", "payroll", "badge"] += len(gone)
        for s in sorted(paid + gone, key=lambda p: p.badge):
            base = round(s.fte * 37.5 * 52 / 12, 2)
            ot = overtime[s.badge, period]
            gross = s.rate * base + 1.5 * s.rate * ot
            rows.append({"badge": s.badge, "period": period, "base_hours": base,
                         "overtime_hours": ot, "gross_pay": f"${gross:,.2f}", "paid_on": paid_on})
    planted["numbers_as_text", "payroll", "gross_pay"] += len(rows)
    schema = pa.schema([("badge", pa.string()), ("period", pa.string()),
                        ("base_hours", pa.float64()), ("overtime_hours", pa.float64()),
                        ("gross_pay", pa.string()), ("paid_on", pa.date32())])
    return pa.Table.from_pylist(rows, schema=schema)


def write_xlsx(path: Path, staff: list[Staff], wards: list[dict[str, Any]]) -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "departments"
    ws.append([f"Department register – exported {EXPORTED.isoformat()}"])
    ws.append([])  # the blank row above the header
    ws.append(["department_code", "department_name", "building", "floor", "head_badge",
               "annual_budget"])
    for code, name, building, floor, budget, _ in DEPARTMENTS:
        head = next(s for s in staff if s.dept == code and s.role == "Consultant")
        ws.append([code, name, building, floor, head.badge, budget])
    ws = wb.create_sheet("wards")
    ws.append(["department_code", "ward_no", "ward_name", "beds", "opened_on"])
    for w in wards:
        ws.append([w["department_code"], w["ward_no"], w["ward_name"], w["beds"], w["opened_on"]])
        ws.cell(ws.max_row, 5).number_format = "yyyy-mm-dd"
    stamp = dt.datetime(2026, 10, 1, 6, 0, 0)
    wb.properties.creator, wb.properties.created = "HR export service", stamp
    buf = io.BytesIO()
    wb.save(buf)
    # openpyxl stamps "modified" with now() and zip entries with the wall clock: pin both.
    out = io.BytesIO()
    with zipfile.ZipFile(buf) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            if info.filename == "docProps/core.xml":
                body = re.sub(rb"(<dcterms:modified[^>]*>)[^<]*", rb"\g<1>2026-10-01T06:00:00Z",
                              body)
            dst.writestr(zipfile.ZipInfo(info.filename, date_time=stamp.timetuple()[:6]), body,
                         compress_type=zipfile.ZIP_DEFLATED)
    path.write_bytes(out.getvalue())


def read_back() -> dict[str, list[dict[str, Any]]]:
    """Every source as the interpreter should see it, read from the written files."""
    with open(OUT / "staff.csv", encoding="cp1252", newline="") as fh:
        header, *rows = csv.reader(fh, delimiter=";")
    shifts = [json.loads(line) for line in (OUT / "shifts.jsonl").read_text("utf-8").splitlines()]
    wb = openpyxl.load_workbook(OUT / "hospital.xlsx")
    sheets = {name: [r for r in wb[name].iter_rows(min_row=hrow, values_only=True) if any(r)]
              for name, hrow in (("departments", 3), ("wards", 1))}
    return {
        "staff": [dict(zip(header, r, strict=True)) for r in rows],
        "shifts": shifts,
        "shifts_assignments": [{"shift_id": s["shift_id"], **a}
                               for s in shifts for a in s["assignments"]],
        **{f"hospital_{n}": [dict(zip(rs[0], r, strict=True)) for r in rs[1:]]
           for n, rs in sheets.items()},
        "payroll": pq.read_table(OUT / "payroll.parquet").to_pylist(),
    }


PRIMARY_KEYS = {"staff": ["badge"], "shifts": ["shift_id"],
                "shifts_assignments": ["shift_id", "badge"],
                "hospital_departments": ["department_code"],
                "hospital_wards": ["department_code", "ward_no"], "payroll": ["badge", "period"]}
FOREIGN_KEYS = [  # (child, columns, parent, columns)
    ("staff", ["department_code"], "hospital_departments", ["department_code"]),
    ("hospital_departments", ["head_badge"], "staff", ["badge"]),
    ("hospital_wards", ["department_code"], "hospital_departments", ["department_code"]),
    ("shifts", ["department_code", "ward_no"], "hospital_wards", ["department_code", "ward_no"]),
    ("shifts_assignments", ["shift_id"], "shifts", ["shift_id"]),
    ("shifts_assignments", ["badge"], "staff", ["badge"]),
    ("payroll", ["badge"], "staff", ["badge"]),
]


def build_truth(t: dict[str, list[dict[str, Any]]], planted: Planted) -> dict[str, Any]:
    def key(row: dict[str, Any], cols: list[str]) -> tuple[Any, ...]:
        return tuple(row[c] for c in cols)

    fks = []
    for child, ccols, parent, pcols in FOREIGN_KEYS:
        parents = {key(r, pcols) for r in t[parent]}
        orphans = sum(key(r, ccols) not in parents for r in t[child])
        fks.append({"from": {"source": child, "columns": ccols},
                    "to": {"source": parent, "columns": pcols}, "orphan_rows": orphans})
    for name, cols in PRIMARY_KEYS.items():  # unique once exact duplicate rows are dropped
        distinct = {json.dumps(r, sort_keys=True, default=str) for r in t[name]}
        assert len({key(r, cols) for r in t[name]}) == len(distinct), name
    planted["unique_key_not_named_id", "staff", "badge"] = len({r["badge"] for r in t["staff"]})
    planted["composite_key", "payroll", None] = len(t["payroll"])
    planted["composite_key", "hospital_wards", None] = len(t["hospital_wards"])
    return {
        "sources": {n: {"row_count": len(t[n]), "primary_key": PRIMARY_KEYS[n]} for n in t},
        "foreign_keys": fks,
        "planted": [{"kind": k, "source": s, "column": c, "count": n,
                     **({"columns": PRIMARY_KEYS[s]} if k == "composite_key" else {})}
                    for (k, s, c), n in sorted(planted.items(), key=lambda kv: str(kv[0]))],
    }


def verify(t: dict[str, list[dict[str, Any]]], truth: dict[str, Any]) -> None:
    """Recount every planted problem from the files, independently of the generator."""
    staff, found = t["staff"], Counter()
    found["duplicate_rows", "staff", None] = len(staff) - len({tuple(r.values()) for r in staff})
    for r in staff:
        found["mixed_formats", "staff", "hire_date"] += not re.fullmatch(
            r"\d{4}-\d\d-\d\d", r["hire_date"])
        found["inconsistent_categories", "staff", "role"] += r["role"] not in ROLES
        found["unparseable_values", "staff", "hourly_rate"] += not re.fullmatch(
            r"\d+,\d\d", r["hourly_rate"])
        for col in ("email", "phone", "postal_code"):
            found["blank_strings", "staff", col] += r[col] == " "
            found["null_tokens", "staff", col] += r[col] in NULL_TOKENS
    for s in t["shifts"]:
        found["inconsistent_categories", "shifts", "status"] += s["status"] not in STATUSES
        found["blank_strings", "shifts", "notes"] += s["notes"] == ""
    fk = {(f["from"]["source"], f["from"]["columns"][0]): f["orphan_rows"]
          for f in truth["foreign_keys"]}
    for src in ("shifts_assignments", "payroll"):
        found["orphan_foreign_keys", src, "badge"] = fk[src, "badge"]
    found["numbers_as_text", "payroll", "gross_pay"] = sum(
        bool(re.fullmatch(r"\$\d{1,3}(,\d{3})*\.\d\d", r["gross_pay"])) for r in t["payroll"])
    for p in truth["planted"]:
        if p["kind"] not in ("unique_key_not_named_id", "composite_key"):
            got = found.pop((p["kind"], p["source"], p["column"]), 0)
            assert got == p["count"], (p, got)
    assert not +found, f"problems found but not recorded: {+found}"


def check_readme(t: dict[str, list[dict[str, Any]]], truth: dict[str, Any]) -> None:
    """data/README.md is written by hand; every number in its tables must match the data."""
    def cols(side: dict[str, Any]) -> str:
        return f"`{side['source']}.{'+'.join(side['columns'])}`"

    expected = [f"| `{n}` | {s['row_count']} |" for n, s in truth["sources"].items()]
    expected += [f"| {cols(f['from'])} | {cols(f['to'])} | {f['orphan_rows']} |"
                 for f in truth["foreign_keys"]]
    expected += [f"| `{p['kind']}` | `{p['source']}` | `{p['column'] or '-'}` | {p['count']} |"
                 for p in truth["planted"]]
    for src, col in (("staff", "role"), ("shifts", "status"), ("staff", "phone"),
                     ("staff", "postal_code")):  # the per-value breakdowns in the details
        expected += [f"`{v}` {n}" for v, n in Counter(r[col] for r in t[src]).items()
                     if v in NULL_TOKENS or (col in ("role", "status") and v not in ROLES)]
    readme = OUT / "README.md"
    text = readme.read_text("utf-8") if readme.exists() else ""
    missing = [line for line in expected if line not in text]
    assert not missing, "data/README.md is out of date; expected rows:\n" + "\n".join(missing)


def main() -> None:
    rng, planted = random.Random(42), Counter()
    OUT.mkdir(parents=True, exist_ok=True)
    staff, former = make_staff(rng)
    with open(OUT / "staff.csv", "w", encoding="cp1252", newline="") as fh:
        writer = csv.writer(fh, delimiter=";", lineterminator="\r\n")
        writer.writerow(["badge", "first_name", "last_name", "role", "department_code",
                         "hire_date", "hourly_rate", "fte", "email", "phone", "postal_code"])
        writer.writerows(staff_rows(rng, staff, planted))
    wards = make_wards(rng)
    shifts = make_shifts(rng, staff, wards, former, planted)
    with open(OUT / "shifts.jsonl", "w", encoding="utf-8", newline="\n") as fh:
        fh.writelines(json.dumps(s, ensure_ascii=False) + "\n" for s in shifts)
    write_xlsx(OUT / "hospital.xlsx", staff, wards)
    pq.write_table(payroll_table(staff, former, shifts, planted), OUT / "payroll.parquet")
    tables = read_back()
    truth = build_truth(tables, planted)
    verify(tables, truth)
    (HERE / "truth.json").write_text(json.dumps(truth, indent=2) + "\n", encoding="utf-8")
    check_readme(tables, truth)
    for name, src in truth["sources"].items():
        print(f"{name:22} {src['row_count']:6} rows  key={src['primary_key']}")
    for f in truth["foreign_keys"]:
        print(f"FK {f['from']} -> {f['to']}: {f['orphan_rows']} orphan rows")
    for p in truth["planted"]:
        print(f"planted {p['kind']:24} {p['source']}.{p['column']}: {p['count']}")


if __name__ == "__main__":
    main()
