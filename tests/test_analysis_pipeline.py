"""SQL + semantic pipelines from the Query Generator's loop: scripted tool-calling model,
scripted light/strong models, real DuckDB warehouse, WordLlama embeddings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from dia_assets.agents.analysis import plan
from dia_assets.agents.analysis.run import answer_with_pipeline
from dia_assets.agents.query.loop import AgentSettings
from dia_assets.agents.semantic_ops.models import CascadeConfig
from dia_assets.contracts.analysis_result import AnalysisResult
from dia_assets.contracts.analysis_steps import Step
from dia_assets.platform.embeddings import WordLlamaEmbedder
from tests.memory_fixtures import db_url, pg_server  # noqa: F401
from tests.query_fixtures import FAKE_MODEL, ScriptedModel, call
from tests.semantic_fixtures import RoutedLLM, register_agent_and_stages

REVIEWS = {
    "A": ["great phone, works well", "love it", "solid battery"],
    "B": ["arrived two weeks late, terrible delivery", "the delivery was delayed again, awful",
          "battery died after a day, useless", "battery drains in hours, very bad",
          "battery is dead already, disappointed", "nice colour and good screen"],
}
DELIVERY = ("late", "delivery", "delayed")


def stage_rule(model: str, task: str, item: dict) -> tuple[Any, float]:
    text = str(item["text"])
    if "groups" in task:
        return ("delivery" if any(w in text for w in DELIVERY) else "battery"), 0.95
    negative = any(w in text for w in ("late", "terrible", "awful", "useless", "bad", "dead", "disappointed"))
    return negative, 0.95


def register(steps: list[Any]) -> tuple[ScriptedModel, RoutedLLM]:
    agent, stages = ScriptedModel(steps), RoutedLLM(stage_rule)
    register_agent_and_stages(agent, stages)
    return agent, stages


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "warehouse.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE sales (product VARCHAR, month INTEGER, amount DOUBLE)")
    con.executemany("INSERT INTO sales VALUES (?, ?, ?)",
                    [("A", 1, 100), ("A", 2, 110), ("B", 1, 200), ("B", 2, 90), ("C", 1, 50), ("C", 2, 45)])
    con.execute("CREATE TABLE reviews (review_id INTEGER, product VARCHAR, body VARCHAR)")
    rows = [(p, t) for p, ts in REVIEWS.items() for t in ts]
    con.executemany("INSERT INTO reviews VALUES (?, ?, ?)", [(i, p, t) for i, (p, t) in enumerate(rows)])
    con.close()
    return path


@pytest.fixture(scope="module")
def embedder() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


CASCADE = CascadeConfig(light_model="fake/light", strong_model="fake/strong", calibration_size=4)
DECLINE = ("SELECT product, sum(CASE WHEN month = 2 THEN amount ELSE 0 END) - "
           "sum(CASE WHEN month = 1 THEN amount ELSE 0 END) AS change FROM sales GROUP BY product "
           "ORDER BY change LIMIT 1")
STEPS = [
    {"output": "decline", "op": "sql", "sql": DECLINE},
    {"output": "product_reviews", "op": "sql",
     "sql": "SELECT r.* FROM reviews r JOIN decline d ON r.product = d.product"},
    {"output": "negative", "op": "sem_filter", "table": "product_reviews", "column": "body",
     "condition": "the review is negative"},
    {"output": "reasons", "op": "sem_group", "table": "negative", "column": "body",
     "labels": ["delivery", "battery"]},
]
CONTRACT = {"kind": "analytical", "columns": ["reason", "reviews"],
            "granularity": {"description": "one row per reason", "key_columns": ["reason"]},
            "order": [{"column": "reviews", "direction": "desc"}]}
FINAL = "SELECT _group AS reason, count(*) AS reviews FROM reasons GROUP BY _group ORDER BY reviews DESC"


def test_sales_decline_and_why_end_to_end(warehouse: Path, tmp_path: Path, embedder) -> None:
    agent, stages = register([call("declare_contract", **CONTRACT), call("run_pipeline", steps=STEPS),
                              call("submit", sql=FINAL, answer="B fell most; battery then delivery")])
    ws = tmp_path / "ws"
    result, run = answer_with_pipeline(
        "Which product had the largest decline in sales, and why?", warehouse, question_id="decline_why",
        model=FAKE_MODEL, workspace=ws, cascade=CASCADE, embedder=embedder,
        settings=AgentSettings(reflect=False, transpile_to=()))
    q = result.query
    assert q.status == "answered", q.message
    assert q.verification.passed and q.preview == [["battery", 3], ["delivery", 2]]
    assert [s.output for s in result.steps] == ["decline", "product_reviews", "negative", "reasons"]
    assert [s.rows for s in result.steps] == [1, 6, 5, 5]
    assert result.operators_used == ["sem_filter", "sem_group", "sql"]
    assert result.warehouse_tables_used == ["sales", "reviews"]
    assert result.model_calls == stages.count("strong") + stages.count("light") > 0
    assert sum(result.stage_mix.values()) == 6 + 5  # every row of both semantic steps decided once
    folder = ws / "analysis" / "decline_why"
    saved = AnalysisResult.read(folder / "analysis.json")
    assert saved.version == 1 and saved.query.sql == FINAL
    con = duckdb.connect(str(folder / "steps.duckdb"), read_only=True)
    stages_seen = {r[0] for r in con.execute("SELECT _stage FROM negative__decisions").fetchall()}
    assert stages_seen and stages_seen <= {"embedding", "light", "strong"}
    assert con.execute("SELECT count(*) FROM reasons WHERE _group = 'battery'").fetchone()[0] == 3
    con.close()
    trace = json.loads((folder / "trace.json").read_text())
    assert [e["output"] for e in trace["events"] if e["event"] == "pipeline_step"] == \
        ["decline", "product_reviews", "negative", "reasons"]
    assert len(trace["pipeline"]) == 4
    # the warehouse was only read
    con = duckdb.connect(str(warehouse), read_only=True)
    assert {r[0] for r in con.execute("SHOW TABLES").fetchall()} == {"sales", "reviews"}
    con.close()


def test_pipeline_sql_goes_through_the_gate_and_errors_reach_the_model(warehouse, tmp_path, embedder) -> None:
    bad = [{"output": "x", "op": "sql", "sql": "SELECT * FROM read_csv('/etc/passwd')"}]
    wrong = [{"output": "y", "op": "sem_filter", "table": "nope", "column": "body", "condition": "c"}]
    agent, _ = register([call("declare_contract", **CONTRACT), call("run_pipeline", steps=bad),
                         call("run_pipeline", steps=wrong),
                         call("run_pipeline", steps=[{"output": "Bad Name", "op": "sql", "sql": "SELECT 1"}]),
                         call("ask", question="stop")])
    result, run = answer_with_pipeline("q", warehouse, model=FAKE_MODEL, cascade=CASCADE, embedder=embedder,
                                       settings=AgentSettings(reflect=False, transpile_to=()))
    results = [m["content"] for m in run.trace["messages"] if m.get("role") == "tool"]
    assert "refused by the SQL gate" in results[1]
    assert "neither a warehouse table" in results[2]
    assert "bad step" in results[3] and result.steps == []


def test_semantic_steps_refused_when_privacy_forbids_values(warehouse, monkeypatch, embedder) -> None:
    register([call("declare_contract", **CONTRACT), call("run_pipeline", steps=STEPS[2:3]),
              call("ask", question="stop")])
    result, run = answer_with_pipeline("q", warehouse, model=FAKE_MODEL, cascade=CASCADE, embedder=embedder,
                                       privacy="aggregates", settings=AgentSettings(reflect=False, transpile_to=()))
    tool = [m["content"] for m in run.trace["messages"] if m.get("role") == "tool"][1]
    assert "privacy mode 'aggregates' forbids" in tool


def test_relational_filter_pushed_below_semantic_filter(warehouse, embedder) -> None:
    steps = [{"output": "neg", "op": "sem_filter", "table": "reviews", "column": "body",
              "condition": "the review is negative"},
             {"output": "neg_b", "op": "sql", "sql": "SELECT * FROM neg WHERE product = 'B'"}]
    register([call("declare_contract", kind="analytical", columns=["n"]), call("run_pipeline", steps=steps),
              call("submit", sql="SELECT count(*) AS n FROM neg_b")])
    result, run = answer_with_pipeline("q", warehouse, model=FAKE_MODEL, cascade=CASCADE, embedder=embedder,
                                       settings=AgentSettings(reflect=False, transpile_to=()))
    assert result.query.status == "answered" and result.query.preview == [[5]]
    assert len(result.steps) == 1 and result.steps[0].output == "neg_b"
    assert result.steps[0].step.where == "product = 'B'"
    assert result.steps[0].operator["rows_in"] == 6  # only product B reached the semantic operator
    assert any("pushed" in n for n in result.optimizations)


def test_semantic_filters_ordered_by_estimated_selectivity() -> None:
    a = Step(output="a", op="sem_filter", table="t", column="x", condition="common")
    b = Step(output="b", op="sem_filter", table="a", column="x", condition="rare")
    c = Step(output="c", op="sql", sql="SELECT * FROM b")
    est = {"common": 0.8, "rare": 0.1}
    steps, notes, estimates = plan.order_semantic_filters(
        [a, b, c], lambda s: est[s.condition], lambda s: ["b"] if s.output == "c" else [])
    assert [(s.output, s.condition, s.table) for s in steps[:2]] == [("a", "rare", "t"), ("b", "common", "a")]
    assert notes and estimates == {"a": 0.8, "b": 0.1}
    kept, _, _ = plan.order_semantic_filters([b.model_copy(update={"table": "t"}), a], lambda s: est[s.condition],
                                             lambda s: [])
    assert kept[0].condition == "rare"  # not a chain: nothing moves


def test_analysis_result_asset_materializes_a_partition(warehouse, tmp_path, monkeypatch, db_url) -> None:  # noqa: F811
    import shutil

    from dagster import DagsterInstance, materialize

    from dia_assets.dagster.analysis import analysis_result_asset
    from dia_assets.dagster.query import QUESTIONS
    from dia_assets.dagster.resources import LLMResource, WorkspaceResource
    from dia_assets.dagster.resources.embeddings import EmbeddingsResource
    from dia_assets.dagster.resources.memory import MemoryResource

    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(warehouse, ws / "warehouse.duckdb")
    questions = tmp_path / "questions.yaml"
    questions.write_text("- id: decline_why\n  question: Which product had the largest decline in sales, and why?\n")
    monkeypatch.setenv("DIA_QUESTIONS", str(questions))
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    monkeypatch.setenv("DIA_SEMANTIC_LIGHT_MODEL", "fake/light")
    monkeypatch.setenv("DIA_SEMANTIC_STRONG_MODEL", "fake/strong")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(QUESTIONS.name, ["decline_why"])
    register([call("declare_contract", **CONTRACT), call("run_pipeline", steps=STEPS), call("submit", sql=FINAL)])
    embeddings = EmbeddingsResource(model="wordllama")
    resources = {"workspace": WorkspaceResource(root=str(ws)), "llm": LLMResource(model=FAKE_MODEL),
                 "memory": MemoryResource(embeddings=embeddings, url=db_url), "embeddings": embeddings}
    asset = analysis_result_asset()
    result = materialize([asset], instance=instance, partition_key="decline_why", resources=resources)
    assert result.success
    (check,) = result.get_asset_check_evaluations()
    assert check.check_name == "answered" and check.passed
    meta = result.asset_materializations_for_node("analysis_result")[0].metadata
    assert meta["status"].value == "answered" and meta["verification_passed"].value is True
    assert meta["tables_used"].value == ["sales", "reviews"]
    assert meta["operators_used"].value == ["sem_filter", "sem_group", "sql"]
    assert meta["semantic_model_calls"].value > 0 and "sem_group" in meta["pipeline_steps"].value
    assert (ws / "analysis" / "decline_why" / "steps.duckdb").exists()
    # without a model the partition is not a green success: no new materialization, a failed
    # run, and its `answered` check fails (events logged per question are in the instance)
    unanswered = materialize([asset], instance=instance, partition_key="decline_why", raise_on_error=False,
                             resources={**resources, "llm": LLMResource(model=None)})
    assert not unanswered.success
    events = [e.dagster_event for e in instance.all_logs(unanswered.run_id) if e.dagster_event]
    assert not [e for e in events if e.event_type_value == "ASSET_MATERIALIZATION"]
    (check,) = [e.event_specific_data for e in events if e.event_type_value == "ASSET_CHECK_EVALUATION"]
    assert not check.passed and "no_model" in (check.description or "") and check.partition == "decline_why"


def test_dia_ask_pipeline_end_to_end(warehouse, tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from dia_assets.cli.app import app

    monkeypatch.setenv("DIA_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setenv("DIA_SEMANTIC_LIGHT_MODEL", "fake/light")
    monkeypatch.setenv("DIA_SEMANTIC_STRONG_MODEL", "fake/strong")
    register([call("declare_contract", **CONTRACT), call("run_pipeline", steps=STEPS), call("submit", sql=FINAL)])
    out = CliRunner().invoke(app, ["ask", "Which product had the largest decline in sales, and why?",
                                   "--pipeline", "--no-memory", "--no-interactive", "--model", FAKE_MODEL,
                                   "--warehouse", str(warehouse), "--id", "why"])
    assert out.exit_code == 0, out.output
    assert "status: answered" in out.output and "| battery | 3 |" in out.output
    assert "pipeline: 4 steps" in out.output and "sem_group   -> reasons (5 rows)" in out.output
    assert (tmp_path / "ws" / "analysis" / "why" / "analysis.json").exists()


def test_a_slow_sql_step_is_interrupted(warehouse, embedder) -> None:
    from dia_assets.agents.analysis.session import AnalysisSession
    from dia_assets.agents.analysis.steps import PipelineError
    from dia_assets.platform.sql.gate import Gate, schema_of

    session = AnalysisSession(warehouse, embedder, CASCADE, timeout_s=0.2)
    try:
        gate = Gate(session.db, schema_of(session.db), "samples")
        slow = Step(output="slow", op="sql", sql="SELECT count(*) AS n FROM range(100000000) a, range(1000) b")
        with pytest.raises(PipelineError, match="interrupted"):
            session.run([slow], gate)
        assert "slow" not in session.tables()
    finally:
        session.close()


def _tool_names(agent: ScriptedModel) -> list[str]:
    return [t["function"]["name"] for t in agent.requests[0]["tools"] or []]


def test_plain_dia_ask_plans_a_pipeline_when_the_question_needs_one(warehouse, tmp_path, monkeypatch) -> None:
    """No --pipeline: the agent is offered run_pipeline (samples, DuckDB, a model) and the
    prompt says when; the scripted model uses it, so the answer comes from a pipeline."""
    from typer.testing import CliRunner

    from dia_assets.cli.app import app

    monkeypatch.setenv("DIA_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.delenv("DIA_PRIVACY", raising=False)
    monkeypatch.setenv("DIA_SEMANTIC_LIGHT_MODEL", "fake/light")
    monkeypatch.setenv("DIA_SEMANTIC_STRONG_MODEL", "fake/strong")
    agent, stages = register([call("declare_contract", **CONTRACT), call("run_pipeline", steps=STEPS),
                              call("submit", sql=FINAL)])
    out = CliRunner().invoke(app, ["ask", "Which product had the largest decline in sales, and why?",
                                   "--no-memory", "--no-interactive", "--model", FAKE_MODEL,
                                   "--warehouse", str(warehouse), "--id", "why"])
    assert out.exit_code == 0, out.output
    assert "run_pipeline" in _tool_names(agent)
    assert "sentiment" in agent.requests[0]["messages"][0]["content"]  # the prompt says when
    assert "status: answered" in out.output and "| battery | 3 |" in out.output
    assert "pipeline: 4 steps" in out.output and stages.count("strong") > 0
    ws = tmp_path / "ws"
    saved = AnalysisResult.read(ws / "analysis" / "why" / "analysis.json")
    assert [s.output for s in saved.steps] == ["decline", "product_reviews", "negative", "reasons"]
    assert (ws / "analysis" / "why" / "steps.duckdb").exists()
    # the answer is also where every answer lives, with the pipeline in its trace
    trace = json.loads((ws / "queries" / "why" / "trace.json").read_text())
    assert len(trace["pipeline"]) == 4 and any(e["event"] == "pipeline_session" for e in trace["events"])
    assert (ws / "queries" / "why" / "result.json").exists()
    from dia_assets.agents.query.run import _INDEX_CACHE

    # the step tables never reach the warehouse's schema index, cached for later questions
    assert _INDEX_CACHE and all("decline" not in index.tables for index in _INDEX_CACHE.values())


def test_plain_dia_ask_keeps_a_sql_question_in_sql(warehouse, tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from dia_assets.cli.app import app

    monkeypatch.setenv("DIA_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.delenv("DIA_PRIVACY", raising=False)
    sql = "SELECT product, sum(amount) AS total FROM sales GROUP BY product ORDER BY total DESC"
    agent, stages = register([call("declare_contract", kind="analytical", columns=["product", "total"],
                                   order=[{"column": "total", "direction": "desc"}]),
                              call("submit", sql=sql)])
    out = CliRunner().invoke(app, ["ask", "Total sales per product?", "--no-memory", "--no-interactive",
                                   "--model", FAKE_MODEL, "--warehouse", str(warehouse), "--id", "totals"])
    assert out.exit_code == 0, out.output
    assert "status: answered" in out.output and "| B | 290.0 |" in out.output
    assert "pipeline:" not in out.output and stages.calls == []
    ws = tmp_path / "ws"
    assert (ws / "queries" / "totals" / "result.json").exists() and not (ws / "analysis").exists()
    trace = json.loads((ws / "queries" / "totals" / "trace.json").read_text())
    assert "pipeline" not in trace and trace["warehouse"] == str(warehouse)  # the warehouse itself, no session


def test_pipelines_not_offered_without_samples_privacy(warehouse, tmp_path, monkeypatch) -> None:
    from typer.testing import CliRunner

    from dia_assets.cli.app import app

    monkeypatch.setenv("DIA_WORKSPACE", str(tmp_path / "ws"))
    monkeypatch.setenv("DIA_PRIVACY", "aggregates")
    agent, _ = register([call("declare_contract", kind="analytical", columns=["n"]),
                         call("submit", sql="SELECT count(*) AS n FROM sales")])
    args = ["ask", "How many sales rows?", "--no-memory", "--no-interactive", "--model", FAKE_MODEL,
            "--warehouse", str(warehouse)]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    assert "run_pipeline" not in _tool_names(agent) and "submit" in _tool_names(agent)
    forced = CliRunner().invoke(app, [*args, "--pipeline"])
    assert forced.exit_code == 2 and "privacy mode 'aggregates'" in forced.output


def _store_catalog(store: Any, warehouse: Path) -> None:
    """A small catalog for the sales/reviews warehouse, under its fingerprint."""
    from dia_assets.agents.catalog.store import CatalogStore
    from dia_assets.contracts.semantic_catalog import CatalogNode, SemanticCatalog
    from dia_assets.platform.warehouse.fingerprint import database_fingerprint

    nodes = [
        CatalogNode(id="domain:shop", level="domain", label="shop", description="shop"),
        CatalogNode(id="entity:reviews", level="entity", label="product reviews", parent="domain:shop",
                    table="reviews", row_count=9, description="customer reviews: opinions about products"),
        CatalogNode(id="attribute:reviews.body", level="attribute", label="review text", parent="entity:reviews",
                    table="reviews", column="body", row_count=9, examples=REVIEWS["B"][:3],
                    description="review text written by customers, complaints and praise"),
        CatalogNode(id="entity:sales", level="entity", label="sales", parent="domain:shop", table="sales",
                    row_count=6, description="monthly sales amount per product"),
    ]
    catalog = SemanticCatalog(generated_at="now", scope=database_fingerprint(str(warehouse)),
                              embedding_model="wordllama", nodes=nodes)
    CatalogStore(store).replace(catalog, store.embedder.embed([n.description for n in nodes]))


def test_query_result_links_through_the_catalog_and_plans_a_pipeline(warehouse, tmp_path, monkeypatch,
                                                                     db_url) -> None:  # noqa: F811
    """`query_result` (not `analysis_result`): catalog schema linking when memory holds a
    catalog for the warehouse, and the agent's own choice of a pipeline."""
    import shutil

    from dagster import DagsterInstance, materialize

    from dia_assets.dagster.query import QUESTIONS, query_result_asset
    from dia_assets.dagster.resources import LLMResource, WorkspaceResource
    from dia_assets.dagster.resources.embeddings import EmbeddingsResource
    from dia_assets.dagster.resources.memory import MemoryResource

    ws = tmp_path / "ws"
    ws.mkdir()
    shutil.copy(warehouse, ws / "warehouse.duckdb")
    questions = tmp_path / "questions.yaml"
    questions.write_text("- id: decline_why\n  question: Which product had the largest decline in sales, and why?\n")
    monkeypatch.setenv("DIA_QUESTIONS", str(questions))
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    monkeypatch.delenv("DIA_PRIVACY", raising=False)
    monkeypatch.setenv("DIA_SEMANTIC_LIGHT_MODEL", "fake/light")
    monkeypatch.setenv("DIA_SEMANTIC_STRONG_MODEL", "fake/strong")
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions(QUESTIONS.name, ["decline_why"])
    embeddings = EmbeddingsResource(model="wordllama")
    memory = MemoryResource(embeddings=embeddings, url=db_url)
    resources = {"workspace": WorkspaceResource(root=str(ws)), "llm": LLMResource(model=FAKE_MODEL),
                 "memory": memory, "embeddings": embeddings}
    script = [call("declare_contract", **CONTRACT), call("run_pipeline", steps=STEPS), call("submit", sql=FINAL)]
    trace_path = ws / "queries" / "decline_why" / "trace.json"

    register(script)  # no catalog stored yet: linking by names and values only
    assert materialize([query_result_asset(deps=[])], instance=instance, partition_key="decline_why",
                       resources=resources).success
    events = json.loads(trace_path.read_text())["events"]
    assert not [e for e in events if e["event"] == "catalog_link"]

    _store_catalog(memory.store(), ws / "warehouse.duckdb")
    agent, _ = register(script)
    result = materialize([query_result_asset(deps=[])], instance=instance, partition_key="decline_why",
                         resources=resources)
    assert result.success
    events = json.loads(trace_path.read_text())["events"]
    (link,) = [e for e in events if e["event"] == "catalog_link"]
    assert "reviews" in link["tables"]
    assert "run_pipeline" in _tool_names(agent)
    meta = result.asset_materializations_for_node("query_result")[0].metadata
    assert meta["status"].value == "answered" and "| battery | 3 |" in meta["preview"].value
    assert meta["operators_used"].value == ["sem_filter", "sem_group", "sql"]
    assert "sem_group" in meta["pipeline_steps"].value and meta["semantic_model_calls"].value > 0
    assert (ws / "analysis" / "decline_why" / "steps.duckdb").exists()


def test_semantic_steps_are_estimated_from_the_catalog_before_they_run(warehouse, embedder) -> None:
    """Over a warehouse table the catalog gives rows in (its row count, deliberately not the
    true 9 here) and the selectivity (its samples); over a step table they are measured."""
    from dia_assets.agents.analysis.session import AnalysisSession
    from dia_assets.contracts.semantic_catalog import CatalogNode
    from dia_assets.platform.sql.gate import Gate, schema_of

    register([])
    catalog = {
        "entity:reviews": CatalogNode(id="entity:reviews", level="entity", label="reviews", table="reviews",
                                      row_count=1000),
        "attribute:reviews.body": CatalogNode(id="attribute:reviews.body", level="attribute", label="body",
                                              table="reviews", column="body", examples=REVIEWS["B"][:4]),
    }
    session = AnalysisSession(warehouse, embedder, CASCADE, catalog=catalog)
    try:
        gate = Gate(session.db, schema_of(session.db), "samples")
        steps = [Step(output="neg", op="sem_filter", table="reviews", column="body",
                      condition="the review is negative"),
                 Step(output="b_only", op="sql", sql="SELECT * FROM neg"),
                 Step(output="grouped", op="sem_group", table="b_only", column="body", labels=["delivery", "battery"])]
        records, _ = session.run(steps, gate)
    finally:
        session.close()
    neg, sql_step, grouped = records
    assert neg.estimate["rows_in"] == 1000 and "catalog row count" in neg.estimate["basis"]
    assert "4 catalog samples" in neg.estimate["basis"] and 0.05 <= neg.estimate["selectivity"] <= 0.95
    assert neg.estimate["rows_out"] == round(1000 * neg.estimate["selectivity"], 1)
    assert sql_step.estimate is None
    assert grouped.estimate == {"rows_in": neg.rows, "selectivity": 1.0, "rows_out": float(neg.rows),
                                "basis": "counted; row-wise, every row kept"}
