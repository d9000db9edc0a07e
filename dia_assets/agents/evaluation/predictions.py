"""Predictions files: SQL another system produced, scored on this harness with no model.

| format | file | key | SQL | db |
|---|---|---|---|---|
| `bird` | `predict_dev.json`: a JSON object `{"0": "SQL\\t----- bird -----\\tdb_id", ...}` | the question's position in the question file (BIRD's scorer pairs by position) | before the separator; a non-text value is an empty prediction (as BIRD's `package_sqls`) | after it |
| `spider` | one query a line, optionally `SQL\\tdb_id`; blank lines skipped (Spider's `evaluation.py`) | the line's position among non-blank lines | the line | after the last tab, if any |
| `jsonl` | one object a line: `id` (or `question_id`), `sql` (or `SQL`), optional `db` (or `db_id`) | the question's id | `sql` | `db` |

Matching (`--match`): `index` reads a key as a 0-based position in the question set as loaded,
`id` as the question's id (BIRD: `question_id`); `auto` is `index` for `bird` and `spider`
files and `id` for `jsonl`. A question without a prediction is scored (0, "no prediction");
a prediction that matches no question is reported and not scored; a prediction naming another
database than its question is reported and run on the question's database.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dia_assets.agents.evaluation.databases import Database
from dia_assets.agents.evaluation.models import EvalInstance, Prediction

PREDICTION_FORMATS = ("auto", "bird", "spider", "jsonl")
MATCH_MODES = ("auto", "index", "id")
BIRD_SEPARATOR = "\t----- bird -----\t"


@dataclass
class PredictedSQL:
    """One prediction as read from the file: its key, SQL and (optional) database id."""

    key: str
    sql: str
    db: str | None = None


@dataclass
class Matching:
    """How a predictions file lines up with the question set."""

    by_id: dict[str, PredictedSQL] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # question ids with no prediction
    unmatched: list[str] = field(default_factory=list)  # prediction keys with no question
    db_mismatch: list[dict[str, str]] = field(default_factory=list)

    def summary(self, path: Path, fmt: str, match: str, total: int) -> dict[str, Any]:
        return {"file": str(path), "format": fmt, "match": match, "predictions": total,
                "matched": len(self.by_id), "missing": self.missing, "unmatched": self.unmatched,
                "db_mismatch": self.db_mismatch}


def detect_prediction_format(path: Path) -> str:
    """bird for a JSON object, jsonl for JSON objects one a line, spider for anything else."""
    if path.suffix.lower() == ".jsonl":
        return "jsonl"
    stripped = path.read_text(encoding="utf-8").lstrip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError:
            return "jsonl"  # several objects: one a line
        return "bird" if not any(k in data for k in ("sql", "SQL")) else "jsonl"
    return "spider"


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    keys = [k for k, _ in pairs]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise ValueError(f"duplicate prediction keys: {', '.join(dup[:10])}")
    return dict(pairs)


def read_bird(path: Path) -> list[PredictedSQL]:
    data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_unique)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a BIRD predictions file is a JSON object of id -> SQL")
    out = []
    for key, value in data.items():
        if not isinstance(value, str):  # BIRD's package_sqls: " " on the default database
            out.append(PredictedSQL(str(key), " "))
            continue
        sql, sep, db = value.partition(BIRD_SEPARATOR)
        out.append(PredictedSQL(str(key), sql, db.strip() or None if sep else None))
    return out


def read_spider(path: Path) -> list[PredictedSQL]:
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    out = []
    for line in (x for x in lines if x):  # Spider's evaluation.py drops blank lines
        sql, sep, db = line.rpartition("\t")
        if sep and re.fullmatch(r"[\w.-]+", db.strip()):  # "SQL<tab>db_id"
            out.append(PredictedSQL(str(len(out)), sql, db.strip()))
        else:
            out.append(PredictedSQL(str(len(out)), line))
    return out


def read_jsonl(path: Path) -> list[PredictedSQL]:
    out: list[PredictedSQL] = []
    seen: set[str] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise ValueError(f"{path}:{n}: not JSON ({err})") from err
        key = row.get("id", row.get("question_id"))
        if key is None:
            raise ValueError(f"{path}:{n}: no id")
        key = str(key)
        if key in seen:
            raise ValueError(f"{path}:{n}: duplicate prediction id {key!r}")
        seen.add(key)
        sql = row.get("sql", row.get("SQL"))
        db = row.get("db", row.get("db_id"))
        out.append(PredictedSQL(key, "" if sql is None else str(sql), str(db) if db else None))
    return out


def read_predictions(path: str | Path, fmt: str = "auto") -> tuple[str, list[PredictedSQL]]:
    """(format, predictions) of a predictions file; keys are unique (a duplicate is an error)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no predictions file at {path}")
    fmt = detect_prediction_format(path) if fmt == "auto" else fmt
    reader = {"bird": read_bird, "spider": read_spider, "jsonl": read_jsonl}.get(fmt)
    if reader is None:
        raise ValueError(f"unknown predictions format {fmt!r}; one of {', '.join(PREDICTION_FORMATS)}")
    return fmt, reader(path)


def match_predictions(instances: Sequence[EvalInstance], preds: Sequence[PredictedSQL], fmt: str,
                      match: str = "auto") -> tuple[str, Matching]:
    """(mode used, matching) of predictions to question ids, by position or by id."""
    if match not in MATCH_MODES:
        raise ValueError(f"--match is one of {', '.join(MATCH_MODES)}")
    mode = ("id" if fmt == "jsonl" else "index") if match == "auto" else match
    ids = [i.id for i in instances]
    known = set(ids)
    out = Matching()
    for pred in preds:
        target: str | None = None
        if mode == "id":
            target = pred.key if pred.key in known else None
        else:
            try:
                pos = int(pred.key)
            except ValueError:
                pos = -1
            target = ids[pos] if 0 <= pos < len(ids) else None
        if target is None:
            out.unmatched.append(pred.key)
            continue
        out.by_id[target] = pred
    for inst in instances:
        pred = out.by_id.get(inst.id)
        if pred is None:
            out.missing.append(inst.id)
        elif pred.db and inst.db and pred.db != inst.db:
            out.db_mismatch.append({"id": inst.id, "prediction_db": pred.db, "question_db": inst.db})
    return mode, out


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


class PredictionsSolver:
    """Answers each question with the file's SQL; a question without one gets no SQL."""

    def __init__(self, matching: Matching, path: Path) -> None:
        self.matching = matching
        self.path = Path(path)
        # the file's content is part of the name: a resumed run cannot mix two files' scores
        self.name = f"predictions:{self.path.name}@{file_digest(self.path)}"

    def solve(self, instance: EvalInstance, db: Database) -> Prediction:
        started = time.perf_counter()
        pred = self.matching.by_id.get(instance.id)
        if pred is None:
            return Prediction(sql=None, status="failed", sql_source="none",
                              error=f"no prediction for {instance.id} in {self.path.name}")
        return Prediction(sql=pred.sql, status="answered", attempts=1, latency_s=time.perf_counter() - started,
                          meta={"prediction_key": pred.key, **({"prediction_db": pred.db} if pred.db else {})})
