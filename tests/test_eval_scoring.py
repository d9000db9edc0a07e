"""One instance end to end on real databases: gold, prediction, EX/soft-F1/VES, failure classes
(DIA App. C), timeouts and broken gold."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.evaluation.databases import DatabaseResolver, QueryTimeout, open_database
from dia_assets.agents.evaluation.failures import convention_detail, unknown_identifiers
from dia_assets.agents.evaluation.runner import score_instance
from tests.eval_fixtures import ScriptedSolver, instance, make_duckdb, make_sqlite

SLOW_SQLITE = ("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
               "SELECT COUNT(*) FROM c")
GOLD = "SELECT name, gpa FROM student WHERE city = 'Oslo'"


@pytest.fixture
def school(tmp_path: Path) -> Path:
    return make_sqlite(tmp_path / "school.sqlite")


def score(db_path: Path, pred: str | None, gold: str | list[str] = GOLD, **kw: object):  # noqa: ANN201
    inst = instance("q", gold, **kw)
    with open_database(db_path) as db:
        return score_instance(inst, db, ScriptedSolver({"q": pred}), timeout_s=5, ves_iterations=3)


def test_correct_prediction_scores_everything(school: Path) -> None:
    rec = score(school, "SELECT s.name, s.gpa FROM student s WHERE s.city = 'Oslo' ORDER BY 1 DESC")
    assert (rec.status, rec.ex, rec.soft_f1, rec.matched_gold) == ("correct", 1, 1.0, 0)
    assert rec.ves_reward in (0.25, 0.5, 0.75, 1.0, 1.25) and rec.time_ratio is not None
    assert rec.failure_class is None and rec.gold[0].row_count == 2


def test_output_convention_column_order(school: Path) -> None:
    rec = score(school, "SELECT gpa, name FROM student WHERE city = 'Oslo'")
    assert (rec.ex, rec.failure_class) == (0, "output_convention")
    assert "another order" in rec.failure_detail
    assert rec.soft_f1 == 1.0  # BIRD's soft-F1 forgives column order


def test_output_convention_extra_and_missing_columns(school: Path) -> None:
    extra = score(school, "SELECT id, name, gpa FROM student WHERE city = 'Oslo'")
    assert (extra.failure_class, extra.ex) == ("output_convention", 0) and "1 extra column" in extra.failure_detail
    missing = score(school, "SELECT name FROM student WHERE city = 'Oslo'")
    assert missing.failure_class == "output_convention" and "missing column" in missing.failure_detail


def test_output_convention_row_order(school: Path) -> None:
    gold = "SELECT name FROM student ORDER BY name"
    rec = score(school, "SELECT name FROM student ORDER BY name DESC", gold, order_matters=True)
    assert (rec.ex, rec.failure_class) == (0, "output_convention")
    assert "row order" in rec.failure_detail
    assert score(school, "SELECT name FROM student ORDER BY name DESC", gold).ex == 1  # set semantics


def test_grounding_unknown_identifiers(school: Path) -> None:
    rec = score(school, "SELECT name, grade FROM student WHERE city = 'Oslo'")
    assert (rec.failure_class, rec.ex) == ("grounding", 0) and "grade" in rec.failure_detail
    table = score(school, "SELECT name, gpa FROM pupils")
    assert table.failure_class == "grounding" and "pupils" in table.failure_detail
    assert unknown_identifiers("SELECT nme FROM student", {"student": ["name"]}, "sqlite") == ["column nme"]
    assert unknown_identifiers("SELECT s.nme FROM student s", {"student": ["name"]}, "duckdb") == ["column nme"]
    assert unknown_identifiers("WITH t AS (SELECT name FROM student) SELECT name FROM t",
                               {"student": ["name"]}, "sqlite") == []


def test_execution_errors_and_missing_sql(school: Path) -> None:
    syntax = score(school, "SELEC name FROM student")
    assert (syntax.failure_class, syntax.ex, syntax.soft_f1) == ("execution", 0, 0.0)
    none = score(school, None)
    assert none.failure_class == "execution" and "no SQL" in none.failure_detail
    assert none.pred is None and none.prediction is not None and none.prediction.status == "failed"


def test_reasoning_is_the_rest(school: Path) -> None:
    rec = score(school, "SELECT name, gpa FROM student WHERE city = 'Rome'")
    assert rec.failure_class == "reasoning" and rec.failure_detail == "1 rows where gold has 2"
    same_shape = score(school, "SELECT name, gpa + 1 FROM student WHERE city = 'Oslo'")
    assert same_shape.failure_detail == "same shape as gold, different values"
    # a defensive NULL filter dropping valid rows: executes, wrong rows -> reasoning
    rec = score(school, "SELECT name FROM student WHERE gpa IS NOT NULL", "SELECT name FROM student")
    assert rec.failure_class == "reasoning"


def test_predicted_timeout_is_an_execution_failure(school: Path) -> None:
    inst = instance("q", GOLD)
    with open_database(school) as db:
        rec = score_instance(inst, db, ScriptedSolver({"q": SLOW_SQLITE}), timeout_s=0.3, ves_iterations=0)
    assert rec.pred is not None and rec.pred.timeout
    assert (rec.ex, rec.failure_class, rec.failure_detail) == (0, "execution", "the predicted SQL timed out")


def test_broken_gold_is_not_counted_and_the_solver_is_not_asked(school: Path) -> None:
    solver = ScriptedSolver({})
    with open_database(school) as db:
        timed_out = score_instance(instance("t", SLOW_SQLITE), db, solver, timeout_s=0.3)
        failing = score_instance(instance("f", "SELECT nope FROM student"), db, solver)
        partial = score_instance(instance("p", ["SELECT nope FROM student", "SELECT COUNT(*) FROM student"]), db,
                                 ScriptedSolver({"p": "SELECT 5"}))
    assert timed_out.status == failing.status == "broken"
    assert "timeout" in timed_out.broken_reason and "nope" in failing.broken_reason
    assert solver.calls == []
    assert (partial.status, partial.matched_gold) == ("correct", 1)  # the alternative that runs counts


def test_duckdb_timeout_and_read_only(tmp_path: Path) -> None:
    path = make_duckdb(tmp_path / "s.duckdb")
    with open_database(path) as db:
        assert db.dialect == "duckdb"
        with pytest.raises(QueryTimeout):
            db.query("SELECT COUNT(*) FROM range(10000000000) a, range(100) b WHERE a.range * b.range = -1", 0.3)
        with pytest.raises(Exception, match="read-only|read only"):
            db.query("CREATE TABLE x (a INTEGER)")
        with pytest.raises(duckdb.Error, match="disabled"):
            db.query("SELECT * FROM read_csv('/etc/passwd')")  # external access disabled
        assert db.schema()["student"][:2] == ["id", "name"]


def test_sqlite_is_read_only(school: Path) -> None:
    with open_database(school) as db:
        before = db.query("SELECT count(*) FROM student").rows
        with pytest.raises(Exception, match="readonly|read-only|not authorized"):
            db.query("DELETE FROM student")
        assert db.query("SELECT count(*) FROM student").rows == before


def test_resolver_finds_benchmark_layouts(tmp_path: Path) -> None:
    make_sqlite(tmp_path / "dbs" / "alpha" / "alpha.sqlite")
    make_duckdb(tmp_path / "dbs" / "beta.duckdb")
    resolver = DatabaseResolver(tmp_path / "dbs")
    assert resolver.target("alpha").endswith("alpha/alpha.sqlite")
    assert resolver.open("beta").dialect == "duckdb"
    with pytest.raises(FileNotFoundError):
        resolver.target("gamma")
    assert DatabaseResolver("postgresql://u@h/{db}").target("yelp") == "postgresql://u@h/yelp"


def test_convention_detail_needs_matching_values() -> None:
    assert convention_detail([("a", 1)], ["x", "y"], [(1, "a")], ["y", "x"]) is not None
    assert convention_detail([("a", 2)], ["x", "y"], [(1, "a")], ["y", "x"]) is None
