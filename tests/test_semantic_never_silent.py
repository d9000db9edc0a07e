"""Semantic operators are never silent (issue 29): with no model they refuse before deciding
a row; with an unreachable model they stop at once, naming the model and the cause, and keep
what was decided, marked; an answer built on decisions the strong model did not make says so,
with their estimated precision or as unverified. Scripted models for what answers, a refused
loopback port for what does not; real DuckDB and WordLlama."""

from __future__ import annotations

import re
import socket
from pathlib import Path
from typing import Any

import duckdb
import litellm
import pytest
from typer.testing import CliRunner

from dia_assets.agents.analysis.caveats import unverified_decisions
from dia_assets.agents.semantic_ops.models import (
    CascadeConfig,
    SemanticModelMissing,
    SemanticModelUnavailable,
)
from dia_assets.agents.semantic_ops.operators import SemanticOps
from dia_assets.cli.ask import verification_line
from dia_assets.contracts.analysis_steps import Step, StepRecord
from dia_assets.contracts.query_result import Check, Verification
from dia_assets.platform.embeddings import WordLlamaEmbedder
from tests.query_fixtures import FAKE_MODEL, ScriptedModel, call
from tests.semantic_fixtures import RoutedLLM, register_agent_and_stages, register_rule

DEAD = "openai/gpt-4o-mini"  # pointed at a loopback port nothing listens on
TEXTS = ["the parcel arrived {} days late", "the courier was {} days behind schedule",
         "the screen is bright and sharp, {} stars", "battery lasts {} hours, great"]


def is_late(text: str) -> bool:
    return any(w in text for w in ("late", "courier"))


@pytest.fixture(scope="module")
def embedder() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


@pytest.fixture
def con() -> duckdb.DuckDBPyConnection:
    c = duckdb.connect()
    c.execute("CREATE TABLE reviews (id INTEGER, body VARCHAR)")
    c.executemany("INSERT INTO reviews VALUES (?, ?)",
                  [(n, t.format(n % 9 + 2)) for n, t in enumerate(TEXTS * 10)])
    c.execute("CREATE TABLE teams AS SELECT * FROM (VALUES ('logistics', 'delivery delays')) t(team, text)")
    return c


@pytest.fixture
def no_model_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DIA_MODEL", "DIA_SEMANTIC_STRONG_MODEL", "DIA_SEMANTIC_LIGHT_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def dead_model(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """DEAD points at a refused loopback port; every litellm call to it is counted."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    base = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    s.close()
    monkeypatch.setenv("OPENAI_API_BASE", base)
    monkeypatch.setenv("OPENAI_API_KEY", "not-used")
    seen: dict[str, Any] = {"calls": 0, "base": base}
    real = litellm.acompletion

    async def counted(*args: Any, **kwargs: Any) -> Any:  # the model door's Router calls the async endpoint
        if str(kwargs.get("model")) == DEAD:
            seen["calls"] += 1
        return await real(*args, **kwargs)

    monkeypatch.setattr(litellm, "acompletion", counted)
    return seen


def tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {r[0] for r in con.execute("SHOW TABLES").fetchall()}


# -- no model configured ---------------------------------------------------------------------

def test_every_operator_refuses_without_a_model_before_deciding_a_row(con, embedder, no_model_env) -> None:
    ops = SemanticOps(con, embedder)  # the configuration a user gets from an empty environment
    assert ops.config.strong_model is None and ops.config.light_model is None
    runs = {
        "sem_filter": lambda: ops.sem_filter("reviews", "body", "late delivery", out="f"),
        # the observed case: allowed values once let the embedding label every row silently
        "sem_extract": lambda: ops.sem_extract("reviews", "body", {"topic": ["delivery", "product"]}, out="e"),
        "sem_group": lambda: ops.sem_group("reviews", "body", out="g", labels=["delivery", "product"]),
        "sem_join": lambda: ops.sem_join("reviews", "body", "teams", "text", "handles it", out="j"),
    }
    for name, run in runs.items():
        with pytest.raises(SemanticModelMissing) as info:
            run()
        assert name in str(info.value) and "DIA_SEMANTIC_STRONG_MODEL" in str(info.value)
        assert "DIA_MODEL" in str(info.value)
    with pytest.raises(SemanticModelMissing):  # clusters without a model to name them: same
        ops.sem_group("reviews", "body", out="k", k=2)
    assert tables(con) == {"reviews", "teams"}  # nothing was decided, nothing written


def test_embedding_only_is_an_explicit_choice_and_marked(con, embedder, no_model_env) -> None:
    ops = SemanticOps(con, embedder, CascadeConfig(allow_unverified=True, margin=0.0))
    report = ops.sem_extract("reviews", "body", {"topic": ["delivery", "product"]}, out="e")
    assert report.model_calls == 0 and set(report.stage_mix) <= {"embedding", "embedding_fallback"}
    record = StepRecord(position=1, step=Step(output="e", op="sem_extract", table="reviews", column="body"),
                        output="e", operator=report.summary())
    (line,) = unverified_decisions([record])
    assert "40 of 40 rows decided without the strong model" in line and "unverified" in line


# -- a model that cannot be reached --------------------------------------------------------

def test_an_unreachable_strong_model_stops_at_once_and_keeps_decided_rows(con, embedder, dead_model) -> None:
    # the light model answers (sure only about couriers); the strong one is down
    register_rule(lambda m, t, it: (is_late(it["text"]), 0.99 if "courier" in it["text"] else 0.5))
    cfg = CascadeConfig(light_model="fake/light", strong_model=DEAD, upper=0.6, lower=0.05)
    ops = SemanticOps(con, embedder, cfg)
    with pytest.raises(SemanticModelUnavailable) as info:
        ops.sem_filter("reviews", "body", "the review complains about late delivery", out="late")
    message = str(info.value)
    assert "\n" not in message and f"'{DEAD}'" in message and dead_model["base"] in message
    assert "unreachable" in message and "Connection refused" in message
    assert dead_model["calls"] == 1  # no retry ladder: one attempt, then the error
    report = info.value.report
    assert report is not None and report.status == "partial" and report.error == message
    mix = dict(con.execute("SELECT _stage, count(*) FROM late__decisions GROUP BY 1").fetchall())
    assert sum(mix.values()) == 40 and mix == report.stage_mix
    assert mix["light"] == 10  # the courier rows the light model was sure of: kept
    assert mix["undecided"] == 40 - mix["light"] - mix.get("embedding", 0) > 0
    assert con.execute("SELECT count(*) FROM late__decisions WHERE _stage = 'undecided' "
                       "AND value IS NOT NULL").fetchone()[0] == 0
    kept = con.execute("SELECT DISTINCT _stage FROM late").fetchall()
    assert kept and {s for (s,) in kept} <= {"light", "embedding"}  # only decided rows in the result


@pytest.mark.parametrize("operator", ["sem_filter", "sem_extract", "sem_group", "sem_join"])
def test_every_operator_fails_fast_when_its_judge_is_unreachable(con, embedder, dead_model, operator) -> None:
    ops = SemanticOps(con, embedder, CascadeConfig(strong_model=DEAD, light_model=None, calibration_size=8))
    run = {
        "sem_filter": lambda: ops.sem_filter("reviews", "body", "late delivery", out="o"),
        "sem_extract": lambda: ops.sem_extract("reviews", "body", {"topic": ["delivery", "product"]}, out="o"),
        "sem_group": lambda: ops.sem_group("reviews", "body", out="o", labels=["delivery", "product"]),
        "sem_join": lambda: ops.sem_join("reviews", "body", "teams", "text", "handles it", out="o"),
    }[operator]
    with pytest.raises(SemanticModelUnavailable, match="Connection refused") as info:
        run()
    assert dead_model["calls"] == 1 and info.value.report.status == "partial"
    stages = {s for (s,) in con.execute("SELECT DISTINCT _stage FROM o__decisions").fetchall()}
    assert stages == {"undecided"}  # the calibration call was the first: nothing decided, all marked


# -- what the verification covers ----------------------------------------------------------

def _record(mix: dict[str, int], precision: dict[str, float] | None = None) -> StepRecord:
    step = Step(output="positive", op="sem_filter", table="tweets", column="text", condition="positive")
    return StepRecord(position=1, step=step, output="positive",
                      operator={"stage_mix": mix, "rows_in": sum(mix.values()), "precision": precision or {}})


def test_passed_never_covers_an_unverified_stage() -> None:
    checks = Verification(passed=True, checks=[Check(name="row_count", passed=True)])
    assert verification_line(checks) == "verification: passed"
    strong_only = unverified_decisions([_record({"strong": 40})])
    assert strong_only == []  # the strong model's own decisions are the reference
    lines = unverified_decisions([_record({"strong": 40, "embedding": 450, "light": 10, "undecided": 0})])
    assert lines == ["sem_filter -> positive: 460 of 500 rows decided without the strong model "
                     "(embedding 450: unverified; light 10: unverified)"]
    shown = verification_line(checks.model_copy(update={"unverified": lines}))
    assert "passed" in shown and "verification: passed" not in shown and "NOT verified" in shown
    assert "unverified" in shown
    estimated = unverified_decisions([_record({"strong": 40, "embedding": 460},
                                              {"embedding:accepted": 0.93, "embedding:rejected": 0.91})])
    assert "embedding 460: estimated precision accepted 0.93, rejected 0.91" in estimated[0]


# -- `dia ask --pipeline` ----------------------------------------------------------------------

REVIEWS = ["great phone, works well", "arrived two weeks late, terrible delivery", "battery died, useless",
           "nice colour and good screen", "the delivery was delayed again, awful", "solid battery"]
STEPS = [
    {"output": "recent", "op": "sql", "sql": "SELECT * FROM reviews WHERE review_id < 100"},
    {"output": "negative", "op": "sem_filter", "table": "recent", "column": "body",
     "condition": "the review is negative"},
]
CONTRACT = {"kind": "analytical", "columns": ["n"]}


def negative(model: str, task: str, item: dict) -> tuple[Any, float]:
    return any(w in str(item["text"]) for w in ("late", "useless", "awful", "terrible")), 0.95


def register_agent(steps: list[Any]) -> RoutedLLM:
    stages = RoutedLLM(negative)
    register_agent_and_stages(ScriptedModel(steps), stages)
    return stages


@pytest.fixture
def warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "warehouse.duckdb"
    c = duckdb.connect(str(path))
    c.execute("CREATE TABLE reviews (review_id INTEGER, body VARCHAR)")
    c.executemany("INSERT INTO reviews VALUES (?, ?)", list(enumerate(REVIEWS * 10)))  # 60 > a 40-row sample
    c.close()
    monkeypatch.setenv("DIA_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.delenv("DIA_PRIVACY", raising=False)
    for name in ("DIA_MODEL", "DIA_SEMANTIC_STRONG_MODEL", "DIA_SEMANTIC_LIGHT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    return path


def ask(warehouse: Path, model: str) -> Any:
    from dia_assets.cli.app import app

    return CliRunner().invoke(app, ["ask", "How many reviews are negative?", "--pipeline", "--no-memory",
                                    "--no-interactive", "--model", model, "--warehouse", str(warehouse), "--id", "neg"])


def test_dia_ask_stops_with_one_line_when_the_semantic_model_is_down(warehouse, dead_model, monkeypatch) -> None:
    monkeypatch.setenv("DIA_SEMANTIC_STRONG_MODEL", DEAD)
    register_agent([call("declare_contract", **CONTRACT), call("run_pipeline", steps=STEPS),
                    call("submit", sql="SELECT count(*) AS n FROM negative")])
    out = ask(warehouse, FAKE_MODEL)
    assert out.exit_code == 1 and "Traceback" not in out.output
    assert out.exception is None or isinstance(out.exception, SystemExit)  # an exit, not a crash
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("error:")]
    assert f"semantic strong model '{DEAD}' at {dead_model['base']} is unreachable" in line
    assert "Connection refused" in line and "sem_filter -> negative stopped after deciding 0 of 60 rows" in line
    assert dead_model["calls"] == 1
    folder = Path(str(warehouse)).parent / "ws" / "analysis" / "neg"
    from dia_assets.contracts.analysis_result import AnalysisResult

    saved = AnalysisResult.read(folder / "analysis.json")
    assert saved.query.status == "failed" and [s.status for s in saved.steps] == ["complete", "partial"]
    assert saved.steps[-1].error and "Connection refused" in saved.steps[-1].error
    con = duckdb.connect(str(folder / "steps.duckdb"), read_only=True)
    try:  # the steps before it and the partial step, marked, are where every pipeline writes them
        assert con.execute("SELECT count(*) FROM recent").fetchone()[0] == 60
        assert con.execute("SELECT _stage, count(*) FROM negative__decisions GROUP BY 1").fetchall() == \
            [("undecided", 60)]
    finally:
        con.close()


def test_dia_ask_fails_fast_when_its_own_model_is_down(warehouse, dead_model) -> None:
    out = ask(warehouse, DEAD)
    assert out.exit_code == 1 and "Traceback" not in out.output
    (line,) = [x for x in out.stderr.splitlines() if x.startswith("error:")]
    assert line == (f"error: model call failed: model '{DEAD}' at {dead_model['base']} is unreachable: "
                    "[Errno 111] Connection refused")
    assert dead_model["calls"] == 1
    assert (Path(str(warehouse)).parent / "ws" / "queries" / "neg" / "result.json").exists()


def test_dia_ask_answer_states_what_verification_did_not_check(warehouse, monkeypatch) -> None:
    monkeypatch.setenv("DIA_SEMANTIC_LIGHT_MODEL", "fake/light")
    monkeypatch.setenv("DIA_SEMANTIC_STRONG_MODEL", "fake/strong")
    c = duckdb.connect(str(warehouse))  # more rows than the strong model's training sample (100)
    c.executemany("INSERT INTO reviews VALUES (?, ?)", [(1000 + i, b) for i, b in enumerate(REVIEWS * 40)])
    c.close()
    steps = [{**STEPS[1], "table": "reviews"}]
    register_agent([call("declare_contract", **CONTRACT), call("run_pipeline", steps=steps),
                    call("submit", sql="SELECT count(*) AS n FROM negative", answer="the negative reviews")])
    out = ask(warehouse, FAKE_MODEL)
    assert out.exit_code == 0, out.output
    stages = eval(re.search(r"stages (\{[^}]*\})", out.stdout).group(1))  # noqa: S307 (our own repr)
    others = sum(n for stage, n in stages.items() if stage != "strong")
    assert stages.get("strong", 0) >= 100 and others > 0  # rows decided without the strong model
    assert (f"status: answered (verified against the contract; semantic decisions of {others} rows not verified)"
            in out.stdout)
    assert "verification: passed" not in out.stdout
    (shown,) = [x for x in out.stdout.splitlines() if x.startswith("verification:")]
    assert shown.startswith("verification: SQL checks passed; NOT verified: sem_filter -> negative:")
    for stage in stages:  # each stage states its certified precision, or says it has none
        if stage == "proxy":
            assert re.search(r"proxy \d+: estimated precision", shown), shown
        elif stage == "light":
            assert re.search(r"light \d+: unverified", shown), shown
    folder = Path(str(warehouse)).parent / "ws" / "queries" / "neg"
    answer = (folder / "answer.md").read_text()
    assert "NOT VERIFIED sem_filter -> negative" in answer and "Note: this answer rests on semantic" in answer
