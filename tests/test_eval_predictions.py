"""`dia eval --predictions FILE`: another system's SQL scored on this harness, no model.

The three file formats on the bundled question set (DuckDB), wrong, failing, missing and
writing predictions, and the statements BIRD's scorer executes (catalog reads,
`sqlite_version()`, comment-only text) scored as BIRD's scorer scores them: the expected value
is computed in this file by BIRD's own procedure (Python sqlite3, execute + fetchall, sets)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from dia_assets.agents.evaluation.databases import DatabaseResolver, open_database
from dia_assets.agents.evaluation.datasets import load_instances
from dia_assets.agents.evaluation.predictions import (
    PredictionsSolver,
    match_predictions,
    read_predictions,
)
from dia_assets.agents.evaluation.runner import read_records, run_eval
from dia_assets.agents.evaluation.sandbox import REFUSED, PredictionSandbox, scoring_gate
from dia_assets.cli.eval import eval as eval_command
from dia_assets.platform.sql.safety import SQLRefused
from tests.eval_fixtures import SAMPLE, make_sqlite, sample_wh  # noqa: F401 - fixture

SEP = "\t----- bird -----\t"
WRONG = "SELECT 42 AS wrong"


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command("eval")(eval_command)
    app.command("noop")(lambda: None)  # two commands: `eval` is a subcommand, as under `dia`
    return app


def _dia_eval(questions: Path, predictions: Path, out: Path, *extra: str) -> Any:
    args = ["eval", str(questions), "--predictions", str(predictions), "--out", str(out), "--quiet",
            "--ves-iterations", "0", *extra]
    return CliRunner().invoke(_app(), args)


def _golds() -> list[tuple[str, str]]:
    return [(q.id, q.gold_sql[0]) for q in load_instances(SAMPLE)]


# -- the three formats on the bundled question set ------------------------------------------------


def test_bird_file_of_gold_sql_scores_100_through_the_gate(sample_wh: Path, tmp_path: Path,  # noqa: F811
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Every bundled gold query, as a BIRD predict_dev.json keyed by position: the gate admits
    and regenerates each one without changing its answer. No model is configured."""
    monkeypatch.delenv("DIA_MODEL", raising=False)
    golds = _golds()
    path = tmp_path / "predict_dev.json"
    path.write_text(json.dumps({str(i): f"{sql}{SEP}hospital" for i, (_, sql) in enumerate(golds)}))
    result = _dia_eval(SAMPLE, path, tmp_path / "out", "--db", str(sample_wh))
    assert result.exit_code == 0, result.output
    assert "EX 100.00%" in result.output
    assert f"predictions: {len(golds)} of {len(golds)} matched a question (bird file, matched by index)" in result.output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["correct"] == len(golds) and summary["predictions"]["missing"] == []
    assert set(summary["by_difficulty"]) == {"easy", "medium", "hard"}
    assert summary["config"]["solver"].startswith("predictions:predict_dev.json@")


def test_spider_lines_score_by_position_and_wrong_answers_score_0(sample_wh: Path, tmp_path: Path) -> None:  # noqa: F811
    golds = _golds()[:6]
    lines = [f"{sql}\thospital" if i % 2 else sql for i, (_, sql) in enumerate(golds)]
    lines[2] = WRONG  # third question answered wrongly
    path = tmp_path / "pred.sql"
    # a blank line is dropped, as Spider's evaluation.py does
    path.write_text("\n".join(lines[:3]) + "\n\n" + "\n".join(lines[3:]) + "\n")
    out = tmp_path / "out"
    result = _dia_eval(SAMPLE, path, out, "--db", str(sample_wh), "--limit", "6")
    assert result.exit_code == 0, result.output
    records = read_records(out)
    assert [records[qid].ex for qid, _ in golds] == [1, 1, 0, 1, 1, 1]
    wrong = records[golds[2][0]]
    assert wrong.pred is not None and wrong.pred.ok and wrong.pred.preview == [[42]]
    assert json.loads((out / "summary.json").read_text())["predictions"]["format"] == "spider"


def test_jsonl_by_id_reports_missing_and_unmatched_ids(sample_wh: Path, tmp_path: Path) -> None:  # noqa: F811
    golds = _golds()[:5]
    rows = [{"id": qid, "sql": sql} for qid, sql in golds[:3]]  # golds[3:] have no prediction
    rows.append({"id": "no_such_question", "sql": "SELECT 1"})
    path = tmp_path / "preds.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    out = tmp_path / "out"
    result = _dia_eval(SAMPLE, path, out, "--db", str(sample_wh), "--limit", "5")
    assert result.exit_code == 0, result.output
    missing = [qid for qid, _ in golds[3:]]
    assert f"2 question(s) have no prediction and score 0: {', '.join(missing)}" in result.output
    assert "1 prediction(s) match no question and are not scored: no_such_question" in result.output
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["scored"], summary["correct"], summary["ex"]) == (5, 3, 60.0)
    assert summary["predictions"]["missing"] == missing
    assert summary["predictions"]["unmatched"] == ["no_such_question"]
    records = read_records(out)
    for qid in missing:
        assert records[qid].ex == 0 and records[qid].pred is None
        assert records[qid].prediction is not None and "no prediction" in (records[qid].prediction.error or "")
    report = (out / "report.md").read_text()
    assert "## Predictions file" in report and "`no_such_question`" in report


def test_nothing_matched_is_an_error_with_a_hint(sample_wh: Path, tmp_path: Path) -> None:  # noqa: F811
    path = tmp_path / "preds.jsonl"
    path.write_text(json.dumps({"id": "x1", "sql": "SELECT 1"}) + "\n")
    result = _dia_eval(SAMPLE, path, tmp_path / "out", "--db", str(sample_wh))
    assert result.exit_code == 2 and "--match" in result.output


def test_reading_and_matching_rules(tmp_path: Path) -> None:
    instances = load_instances(SAMPLE)[:3]
    bird = tmp_path / "p.json"
    bird.write_text(json.dumps({"0": f"SELECT 1{SEP}hospital", "1": None, "2": f"SELECT 2{SEP}other_db"}))
    fmt, preds = read_predictions(bird)
    assert fmt == "bird" and [(p.key, p.sql, p.db) for p in preds] == [
        ("0", "SELECT 1", "hospital"), ("1", " ", None), ("2", "SELECT 2", "other_db")]
    mode, m = match_predictions(instances, preds, fmt)
    assert mode == "index" and list(m.by_id) == [i.id for i in instances]
    assert m.db_mismatch == [{"id": instances[2].id, "prediction_db": "other_db", "question_db": "hospital"}]
    # keys read as question ids instead: none of "0", "1", "2" is an id of the sample
    _, by_id = match_predictions(instances, preds, fmt, "id")
    assert by_id.unmatched == ["0", "1", "2"] and by_id.missing == [i.id for i in instances]
    dup = tmp_path / "dup.json"
    dup.write_text('{"0": "SELECT 1", "0": "SELECT 2"}')
    with pytest.raises(ValueError, match="duplicate"):
        read_predictions(dup)
    spider = tmp_path / "p.txt"
    spider.write_text("SELECT a\tFROM t\nSELECT 1\tdb_1\n")  # a tab inside SQL is not a db id
    assert [(p.sql, p.db) for p in read_predictions(spider)[1]] == [("SELECT a\tFROM t", None), ("SELECT 1", "db_1")]


# -- BIRD's special cases, on SQLite ------------------------------------------------------------------

CITIES = "SELECT name FROM student WHERE city = 'Oslo'"
NOBODY = "SELECT name FROM student WHERE city = 'Paris'"  # empty result
QUESTIONS = [
    {"question_id": 0, "db_id": "school", "question": "Oslo?", "evidence": "", "SQL": CITIES, "difficulty": "simple"},
    {"question_id": 1, "db_id": "school", "question": "Paris?", "evidence": "", "SQL": NOBODY, "difficulty": "moderate"},
]
# (prediction, question index): statements BIRD's scorer executes as they are
BIRD_EXECUTES = [
    ("SELECT name FROM sqlite_master WHERE type = 'table'", 0),
    ("SELECT name FROM sqlite_master WHERE name = 'no_such_table'", 1),  # empty: matches empty gold
    ("SELECT tbl_name FROM sqlite_schema WHERE 0", 1),
    ("SELECT sqlite_version()", 0),
    ("-- nothing to run", 1),  # no statement: no rows, like an empty gold
    ("/* still nothing */ ;", 0),
    ("", 1),
    ("", 0),
    (CITIES + ";", 0),
    ("SELECT name FROM student WHERE city = 'Oslo' ORDER BY name DESC", 0),
    ("SELECT name, name FROM student WHERE city = 'Oslo'", 0),
    ("SELECT abs(-9223372036854775808)", 0),  # integer overflow: an engine error
    ("SELECT name FROM student; SELECT 1", 0),  # two statements: sqlite3 raises
    # SQLite's double-quoted string fallback: "Oslo" is no column, so it is the string 'Oslo'
    ('SELECT name FROM student WHERE city = "Oslo"', 0),
    ('SELECT "name" FROM student WHERE "city" = "Paris"', 1),
    ("SELECT `nosuch` FROM student", 0),  # backquotes have no such fallback: an error
]


def bird_reference(db_path: Path, predicted: str, gold: str) -> int:
    """BIRD's evaluation.py `execute_sql`, on a copy (it opens the file read-write)."""
    copy = db_path.with_name("bird_copy.sqlite")
    shutil.copy(db_path, copy)
    con = sqlite3.connect(copy)
    try:
        cur = con.cursor()
        cur.execute(predicted)
        pred = cur.fetchall()
        cur.execute(gold)
        return int(set(pred) == set(cur.fetchall()))
    except Exception:
        return 0
    finally:
        con.close()
        copy.unlink()


def _bird_set(root: Path) -> tuple[Path, Path]:
    db = make_sqlite(root / "dev_databases" / "school" / "school.sqlite")
    questions = root / "dev.json"
    questions.write_text(json.dumps(QUESTIONS))
    return questions, db


def _score(questions: Path, db: Path, answers: list[tuple[str, int]], out: Path) -> list[Any]:
    """Score each answer on its question (one run per answer: one prediction per question)."""
    records = []
    for n, (sql, q) in enumerate(answers):
        path = out / f"pred{n}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({str(q): f"{sql}{SEP}school"}))
        instances = load_instances(questions)
        _, matching = match_predictions(instances, read_predictions(path)[1], "bird")
        run_eval([instances[q]], DatabaseResolver(db.parent.parent, catalog_reads=True),
                 PredictionsSolver(matching, path), out / f"run{n}", ves_iterations=1,
                 execute_pred=PredictionSandbox())
        records.append(read_records(out / f"run{n}")[str(q)])
    return records


def test_statements_bird_executes_score_as_bird_scores_them(tmp_path: Path) -> None:
    questions, db = _bird_set(tmp_path / "bird")
    records = _score(questions, db, BIRD_EXECUTES, tmp_path / "runs")
    ours = [r.ex for r in records]
    bird = [bird_reference(db, sql, QUESTIONS[q]["SQL"]) for sql, q in BIRD_EXECUTES]
    assert ours == bird
    # VES times the statement as it ran (gated, regenerated; nothing for comment-only text)
    assert all(r.ves_reward for r in records if r.ex) and not any(r.ves_reward for r in records if not r.ex)
    assert bird == [0, 1, 1, 0, 1, 0, 1, 0, 1, 1, 0, 0, 0, 1, 1, 0]  # the cases are not all alike
    catalog, _, _, version = records[:4]
    assert catalog.pred is not None and catalog.pred.ok and catalog.pred.preview == [["dept"], ["student"]]
    assert version.pred is not None and version.pred.preview == [[sqlite3.sqlite_version]]
    overflow, two = records[11:13]
    assert overflow.pred is not None and not overflow.pred.ok and "overflow" in (overflow.pred.error or "")
    assert two.pred is not None and REFUSED in (two.pred.error or "") and "one statement" in (two.pred.error or "")
    assert records[13].pred is not None and records[13].pred.sql == "SELECT name FROM student WHERE city = 'Oslo'"
    assert records[15].pred is not None and "unknown column 'nosuch'" in (records[15].pred.error or "")


WRITES = [
    "DELETE FROM student",
    "UPDATE student SET city = 'Paris'",
    "INSERT INTO student (id, name) VALUES (9, 'Zed')",
    "DROP TABLE student",
    "CREATE TABLE t AS SELECT * FROM student",
    "WITH gone AS (DELETE FROM student RETURNING name) SELECT name FROM gone",
    "ATTACH DATABASE '/tmp/x.sqlite' AS x",
    "PRAGMA writable_schema = 1",
    "SELECT load_extension('/tmp/evil')",
    "SELECT readfile('/etc/passwd')",
]


def test_writes_and_escapes_are_refused_score_0_and_change_nothing(tmp_path: Path) -> None:
    """BIRD's scorer runs predictions on a read-write connection (a DELETE then scores 1
    against an empty gold); here every write is refused by the gate: 0, with the refusal."""
    questions, db = _bird_set(tmp_path / "bird")
    before = db.read_bytes()
    records = _score(questions, db, [(sql, 1) for sql in WRITES], tmp_path / "runs")
    for sql, rec in zip(WRITES, records, strict=True):
        assert rec.ex == 0, sql
        assert rec.pred is not None and not rec.pred.ok, sql
        assert (rec.pred.error or "").startswith(REFUSED), (sql, rec.pred.error)
    assert db.read_bytes() == before
    assert bird_reference(db, "DELETE FROM student", NOBODY) == 1  # what BIRD would have said


def test_catalog_reads_only_where_scoring_asks_for_them(tmp_path: Path) -> None:
    """The agent's connection and gate still refuse the catalog; the scoring gate admits only
    reads of it, and the connection's own authorizer agrees."""
    db_path = make_sqlite(tmp_path / "school.sqlite")
    plain = open_database(db_path)
    with pytest.raises(SQLRefused, match="unknown table"):
        scoring_gate(plain).check("SELECT name FROM sqlite_master")
    with pytest.raises(SQLRefused, match="not allowed"):
        scoring_gate(plain).check("SELECT sqlite_version()")
    with pytest.raises(Exception, match="not authorized|prohibited"):
        plain.query("SELECT name FROM sqlite_master")
    scoring = open_database(db_path, catalog_reads=True)
    assert scoring.query("SELECT count(*) FROM sqlite_master").rows == [(2,)]
    with pytest.raises(SQLRefused, match="is a write"):
        scoring_gate(scoring).check("DELETE FROM sqlite_master")
    with pytest.raises(Exception, match="not authorized|prohibited|readonly"):
        scoring.query("UPDATE student SET city = 'x'")
    plain.close()
    scoring.close()
