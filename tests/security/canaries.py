"""A small raw-data folder whose every value is a canary: text carries `ZQX`, numbers and
dates are distinctive digit strings, so any value that reaches a model request or an MCP
response is found by a plain search.

- `people.csv`: text key, names with quotes (`O'QUOKKA`, `"hi"`), a messy categorical column
  (the Schema Creator maps spellings), dates, decimals, integers, e-mails, and one rate that
  is not a number (a reject with an example).
- `visits.json`: integer key, a foreign key to people with one orphan, dates, amounts, text.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

PEOPLE = 40
VISITS = 60


def _person(i: int) -> dict[str, str]:
    roles = ["ZQXROLE Alpha", "ZQXROLE Beta", "zqxrole alpha", "ZQXROLE ALPHA ", "ZQXROLE Beta"]
    return {
        "badge": f"ZQXB{i:02d}",
        "full_name": f"ZQXNAME O'QUOKKA {i:02d}",
        "role": roles[i % len(roles)],
        "hired_on": f"1911-{(i % 12) + 1:02d}-{(i % 27) + 1:02d}",
        "hourly_rate": "ZQXBADRATE" if i == 7 else f"{7312.45 + i * 1.11:.2f}",
        "employee_no": str(804100 + i),
        "email": f"zqx{i:02d}@zqxmail.test",
        "remark": f'ZQXNOTE say "hi", row {i:02d}',
    }


def _visit(i: int) -> dict[str, object]:
    return {
        "visit_id": 910000 + i,
        "badge": "ZQXB99" if i == VISITS else f"ZQXB{(i % PEOPLE) + 1:02d}",
        "visited_on": f"1912-{(i % 12) + 1:02d}-{(i % 27) + 1:02d}",
        "amount": round(55501.25 + i * 3.17, 2),
        "reason": f"ZQXREASON checkup {i:02d}",
    }


def write_folder(folder: Path) -> Path:
    """Write the two raw files into `folder` and return it."""
    folder.mkdir(parents=True, exist_ok=True)
    people = [_person(i) for i in range(1, PEOPLE + 1)]
    with (folder / "people.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(people[0]))
        writer.writeheader()
        writer.writerows(people)
    visits = [_visit(i) for i in range(1, VISITS + 1)]
    (folder / "visits.json").write_text(json.dumps(visits, indent=1), encoding="utf-8")
    return folder


def canaries() -> list[str]:
    """Every raw value of the folder, as the strings a leak would show: text values (and
    their ZQX words), numbers, dates and the dates' years-with-month."""
    values: set[str] = set()
    for i in range(1, PEOPLE + 1):
        values.update(str(v).strip() for v in _person(i).values())
    for i in range(1, VISITS + 1):
        values.update(str(v) for v in _visit(i).values())
    values.update(w for v in list(values) for w in re.findall(r"zqx\w*", v, flags=re.IGNORECASE))
    return sorted(v for v in values if len(v) >= 4)


_ZQX = re.compile(r"zqx", re.IGNORECASE)


def found(text: str, values: list[str] | None = None) -> list[str]:
    """The canaries in `text`: any `zqx` (whatever the case), any raw number or date."""
    hits = sorted({m.group(0) for m in _ZQX.finditer(text)})
    for value in values if values is not None else canaries():
        if not _ZQX.search(value) and re.search(rf"(?<![\w.]){re.escape(value)}(?!\.?\d)(?![\w])", text):
            hits.append(value)
    return hits
