"""Helpers for the evaluation tests: tiny databases, benchmark-shaped files and scripted solvers.

Fixtures defined here are imported by the test modules (`from tests.eval_fixtures import ...`)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.evaluation.databases import Database
from dia_assets.agents.evaluation.models import EvalInstance, Prediction

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "examples" / "eval" / "questions.jsonl"

# A small school database: the same statements build the SQLite and DuckDB versions.
SCHOOL = [
    "CREATE TABLE dept (id INTEGER PRIMARY KEY, name TEXT, building TEXT)",
    "CREATE TABLE student (id INTEGER PRIMARY KEY, name TEXT, dept_id INTEGER, gpa REAL, city TEXT)",
    "INSERT INTO dept VALUES (1, 'Physics', 'North'), (2, 'History', 'South'), (3, 'Art', 'South')",
    "INSERT INTO student VALUES (1, 'Ana', 1, 3.5, 'Oslo'), (2, 'Bo', 1, 3.9, 'Rome'), (3, 'Cy', 2, 2.8, 'Oslo'),"
    " (4, 'Di', 2, NULL, 'Lima'), (5, 'Ed', 3, 3.9, NULL)",
]


def make_sqlite(path: Path, statements: list[str] = SCHOOL) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(path)
    for stmt in statements:
        con.execute(stmt)
    con.commit()
    con.close()
    return path


def make_duckdb(path: Path, statements: list[str] = SCHOOL) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(str(path))
    for stmt in statements:
        con.execute(stmt)
    con.close()
    return path


def instance(id: str, gold: str | list[str], db: str = "school", **kw: object) -> EvalInstance:  # noqa: A002
    return EvalInstance(id=id, question=f"question {id}", gold_sql=[gold] if isinstance(gold, str) else gold,
                        db=db, dialect=str(kw.pop("dialect", "sqlite")), **kw)  # type: ignore[arg-type]


class ScriptedSolver:
    """Answers each instance id with a fixed SQL (None: no SQL); counts its calls."""

    name = "scripted"

    def __init__(self, answers: dict[str, str | None], on_call: Callable[[int], None] | None = None) -> None:
        self.answers = answers
        self.calls: list[str] = []
        self.on_call = on_call

    def solve(self, inst: EvalInstance, db: Database) -> Prediction:
        self.calls.append(inst.id)
        if self.on_call:
            self.on_call(len(self.calls))
        sql = self.answers.get(inst.id, inst.gold_sql[0])
        return Prediction(sql=sql, status="answered" if sql else "failed", attempts=1, tokens=10,
                          prompt_tokens=8, completion_tokens=2, cost_usd=0.001, latency_s=float(len(self.calls)))


def write_bird(root: Path) -> Path:
    """A BIRD-shaped dev set: dev.json and dev_databases/<db>/<db>.sqlite."""
    make_sqlite(root / "dev_databases" / "school" / "school.sqlite")
    rows = [
        {"question_id": 0, "db_id": "school", "question": "How many students are there?",
         "evidence": "", "SQL": "SELECT COUNT(*) FROM student", "difficulty": "simple"},
        {"question_id": 1, "db_id": "school", "question": "Names of students with the top GPA?",
         "evidence": "top GPA refers to MAX(gpa)", "SQL": "SELECT name FROM student WHERE gpa = (SELECT MAX(gpa) FROM student)",
         "difficulty": "moderate"},
        {"question_id": 2, "db_id": "school", "question": "Students per building?",
         "evidence": "", "SQL": "SELECT T2.building, COUNT(T1.id) FROM student AS T1 INNER JOIN dept AS T2 ON T1.dept_id = T2.id GROUP BY T2.building",
         "difficulty": "challenging"},
    ]
    path = root / "dev.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def write_spider(root: Path) -> Path:
    make_sqlite(root / "database" / "school" / "school.sqlite")
    rows = [
        {"db_id": "school", "question": "List student names by GPA, best first.",
         "query": "SELECT name FROM student WHERE gpa IS NOT NULL ORDER BY gpa DESC, name"},
        {"db_id": "school", "question": "Which cities do students come from?", "query": "SELECT DISTINCT city FROM student"},
    ]
    path = root / "dev.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def write_defog(root: Path) -> Path:
    make_duckdb(root / "school.duckdb")
    path = root / "questions_gen.csv"
    path.write_text(
        "db_name,query_category,query,question,instructions\n"
        'school,group_by,"SELECT {d.id, d.name}, COUNT(s.id) AS n FROM dept d JOIN student s ON s.dept_id = d.id '
        'GROUP BY {}","How many students per department?",\n'
        'school,order_by,"SELECT name FROM student WHERE city ILIKE \'oslo\' ORDER BY name","Sort the names of students '
        'from Oslo.",Compare cities case-insensitively\n',
        encoding="utf-8",
    )
    return path


@pytest.fixture(scope="session")
def sample_wh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled sample's stand-in warehouse (canonical spellings, deduplicated)."""
    from tests.eval_stand_in import build_sample_warehouse

    return build_sample_warehouse(tmp_path_factory.mktemp("eval_sample") / "warehouse.duckdb")
