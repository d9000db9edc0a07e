"""The Visualization agent: the rules' chart per result shape, the optional model override
(scripted litellm model), privacy of the model pass, and offline rendering to PNG/SVG."""

from __future__ import annotations

import datetime as dt
import json
import struct
import zlib
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from dia_assets.agents.charts.choose import choose_chart, litellm_chart_model, rule_chart
from dia_assets.agents.charts.render import MIN_INK, ink_fraction, inline_markdown, render_chart
from dia_assets.contracts.chart import ChartSpec
from tests.fake_llm import register

MONTHS = [dt.date(2026, m, 1) for m in range(1, 7)]

# (name, columns, rows, expected kind, expected x, expected y, expected series)
SHAPES: list[tuple[str, list[str], list[tuple[Any, ...]], str, str | None, list[str], str | None]] = [
    ("empty result", ["role", "n"], [], "table", None, [], None),
    ("single number", ["staff_count"], [(42,)], "big_number", None, ["staff_count"], None),
    ("single decimal with a label", ["ward", "avg_beds"], [("W1", Decimal("12.50"))], "big_number", None,
     ["avg_beds"], None),
    ("dates x measure", ["month", "hours"], [(m, 100 + i) for i, m in enumerate(MONTHS)], "line", "month",
     ["hours"], None),
    ("ISO month text x measure", ["period", "cost"], [(f"2026-0{i}", 10.0 * i) for i in range(1, 7)], "line",
     "period", ["cost"], None),
    ("integer years x measure", ["hire_year", "hires"], [(2020 + i, i * 3) for i in range(5)], "line",
     "hire_year", ["hires"], None),
    ("timestamps x two measures", ["shift_start", "hours", "overtime"],
     [(dt.datetime(2026, 1, d, 8), 8, d % 3) for d in range(1, 9)], "line", "shift_start",
     ["hours", "overtime"], None),
    ("dates x category x measure", ["month", "role", "hours"],
     [(m, r, 10 + i) for i, m in enumerate(MONTHS) for r in ("RN", "MD")], "line", "month", ["hours"], "role"),
    ("category x measure", ["role", "staff_count"], [("RN", 40), ("MD", 12), ("Admin", 7)], "bar", "role",
     ["staff_count"], None),
    ("id-like code x measure", ["department_id", "beds"], [(1, 40), (2, 25), (3, 30)], "bar", "department_id",
     ["beds"], None),
    ("category x two measures", ["department", "beds", "wards"], [("Cardiology", 40, 4), ("ER", 20, 2)], "bar",
     "department", ["beds", "wards"], None),
    ("two measures", ["age", "salary"], [(20 + i, 1000 + 37 * i) for i in range(30)], "scatter", "age",
     ["salary"], None),
    ("many rows of a category x two measures", ["badge", "hours", "pay"],
     [(f"B{i:03}", 100 + i, 2000 + 5 * i) for i in range(60)], "scatter", "hours", ["pay"], None),
    ("category x part x measure", ["department", "role", "staff"],
     [(d, r, 1 + i) for i, (d, r) in enumerate((d, r) for d in ("ER", "ICU", "Ward") for r in ("RN", "MD"))],
     "stacked_bar", "department", ["staff"], "role"),
    ("shares of a whole", ["role", "pct_of_staff"], [("RN", 55.0), ("MD", 30.0), ("Admin", 15.0)],
     "stacked_bar", None, ["pct_of_staff"], "role"),
    ("fractions of a whole", ["contract", "share"], [("full", 0.7), ("part", 0.3)], "stacked_bar", None,
     ["share"], "contract"),
    ("text only", ["first_name", "last_name"], [("Ana", "Silva"), ("Bo", "Li")], "table", None, [], None),
    ("too many categories", ["badge", "hours"], [(f"B{i:03}", i) for i in range(80)], "table", None, [], None),
    ("one row, several measures", ["staff", "beds", "wards"], [(100, 300, 12)], "table", None, [], None),
    ("a list of numbers", ["hours"], [(8,), (7,), (9,)], "table", None, [], None),
    ("too many series over time", ["month", "badge", "hours"],
     [(m, f"B{b}", b) for m in MONTHS for b in range(20)], "table", None, [], None),
]


@pytest.mark.parametrize(("name", "columns", "rows", "kind", "x", "y", "series"), SHAPES, ids=[s[0] for s in SHAPES])
def test_rules_choose_the_chart_for_each_result_shape(name: str, columns: list[str], rows: list[tuple[Any, ...]],
                                                      kind: str, x: str | None, y: list[str], series: str | None) -> None:
    spec = rule_chart(columns, rows)
    assert (spec.kind, spec.x, spec.y, spec.series) == (kind, x, y, series), spec.reason
    assert spec.reason and spec.chosen_by == "rules" and spec.rule_kind == kind
    assert spec.row_count == len(rows)


def test_a_share_that_does_not_sum_to_a_whole_is_a_bar() -> None:
    spec = rule_chart(["role", "pct_overtime"], [("RN", 12.0), ("MD", 30.0)])
    assert spec.kind == "bar"


def _blank_png(width: int = 40, height: int = 20, raw: bytes | None = None) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    raw = raw or b"".join(b"\x00" + b"\xff" * (width * 4) for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def test_the_blank_check_fails_on_a_blank_image() -> None:
    assert ink_fraction(_blank_png()) == 0.0 == ink_fraction(_blank_png(), enough=MIN_INK)
    # one inked pixel in the last row: counted whether or not decoding may stop early
    width, height = 40, 20
    rows = [b"\x00" + b"\xff" * (width * 4) for _ in range(height - 1)]
    rows.append(b"\x00" + b"\x00\x00\x00\xff" + b"\xff" * ((width - 1) * 4))
    png = _blank_png(width, height, b"".join(rows))
    assert ink_fraction(png) == ink_fraction(png, enough=MIN_INK) == 1 / (width * height)


@pytest.mark.parametrize("case", ["category x measure", "dates x measure", "single number", "two measures",
                                  "category x part x measure", "shares of a whole", "category x two measures"])
def test_rendered_png_and_svg_exist_and_are_not_blank(case: str, tmp_path: Path) -> None:
    _, columns, rows, kind, *_ = next(s for s in SHAPES if s[0] == case)
    spec = rule_chart(columns, rows).model_copy(update={"title": f"Question about {case}"})
    done = render_chart(spec, columns, rows, tmp_path)
    png, svg = tmp_path / "chart.png", tmp_path / "chart.svg"
    assert done.kind == kind and done.files == {"png": str(png), "svg": str(svg)}
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert ink_fraction(data) > 0.01  # marks, axes and text drew something
    # the check render_chart makes stops decoding once the chart is known not to be blank
    assert MIN_INK <= ink_fraction(data, enough=MIN_INK) < ink_fraction(data)
    text = svg.read_text()
    assert "<text" in text and f"Question about {case}" in text  # fonts render: the title is there
    assert not done.warnings
    assert ChartSpec.read(tmp_path / "chart.json") == done


def test_a_table_renders_no_image(tmp_path: Path) -> None:
    (tmp_path / "chart.png").write_bytes(b"old")
    spec = rule_chart(["first_name"], [("Ana",)])
    done = render_chart(spec, ["first_name"], [("Ana",)], tmp_path)
    assert done.kind == "table" and done.files == {}
    assert not (tmp_path / "chart.png").exists()  # a stale image from an earlier answer is gone
    assert inline_markdown(done).startswith("**table**")


def test_inline_markdown_embeds_the_png(tmp_path: Path) -> None:
    done = render_chart(rule_chart(["role", "n"], [("RN", 4), ("MD", 2)]), ["role", "n"], [("RN", 4), ("MD", 2)], tmp_path)
    md = inline_markdown(done)
    assert md.startswith("![bar chart](data:image/png;base64,iVBORw0KGgo")  # PNG magic in base64


# -- the model pass -----------------------------------------------------------------------------

ROLE_ROWS = [("RN", 40), ("MD", 12), ("Admin", 7)]


def test_a_model_may_override_the_rules_with_a_reason() -> None:
    fake = register([json.dumps({"kind": "stacked_bar", "x": None, "y": ["staff_count"], "series": "role",
                                 "reason": "the question asks for the make-up of the staff"})])
    usage: list[dict[str, Any]] = []
    spec = choose_chart("What is the make-up of our staff by role?", ["role", "staff_count"], ROLE_ROWS,
                        model=litellm_chart_model("fake/chart"), usage=usage)
    assert (spec.kind, spec.series, spec.chosen_by, spec.rule_kind) == ("stacked_bar", "role", "model", "bar")
    assert spec.reason == "the question asks for the make-up of the staff"
    assert len(fake.calls) == 1 and usage[0]["model"] == "fake/chart"
    assert "sample_rows" in fake.calls[0][-1]["content"]  # samples mode: the model may see rows


@pytest.mark.parametrize(("reply", "refusal"), [
    ({"kind": "pie", "reason": "pies are nice"}, "unknown chart kind"),
    ({"kind": "stacked_bar", "y": ["staff_count"], "series": "role"}, "no reason"),
    ({"kind": "bar", "x": "grade", "y": ["staff_count"], "reason": "r"}, "no result column 'grade'"),
    ({"kind": "scatter", "x": "role", "y": ["staff_count"], "reason": "r"}, "numeric x"),
    ({"kind": "big_number", "y": ["staff_count"], "reason": "r"}, "one row"),
    ({"kind": "line", "x": "role", "y": ["role"], "reason": "r"}, "numeric measures"),
    ("I would use a pie chart.", "no JSON object"),
])
def test_a_proposal_that_does_not_fit_the_result_is_refused(reply: Any, refusal: str) -> None:
    register([reply if isinstance(reply, str) else json.dumps(reply)])
    spec = choose_chart("Staff per role?", ["role", "staff_count"], ROLE_ROWS, model=litellm_chart_model("fake/chart"))
    assert spec.kind == "bar" and spec.chosen_by == "rules"
    assert refusal in spec.override_refused


def test_keep_leaves_the_rules_choice() -> None:
    register(['{"keep": true}'])
    spec = choose_chart("Staff per role?", ["role", "staff_count"], ROLE_ROWS, model=litellm_chart_model("fake/chart"))
    assert spec.kind == "bar" and spec.chosen_by == "rules" and not spec.override_refused


def test_a_failing_model_keeps_the_rules_choice_and_says_why() -> None:
    def broken(messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        raise ConnectionError("provider down")

    spec = choose_chart("Staff per role?", ["role", "staff_count"], ROLE_ROWS, model=broken)
    assert spec.kind == "bar" and "provider down" in spec.override_refused


@pytest.mark.parametrize("privacy", ["schema-only", "aggregates"])
def test_the_model_pass_sees_no_values_outside_samples_mode(privacy: str) -> None:
    fake = register(['{"keep": true}'])
    rows = [("Registered Nurse", 40), ("Physician", 12)]
    spec = choose_chart("Staff per role?", ["role", "staff_count"], rows, model=litellm_chart_model("fake/chart"),
                        privacy=privacy)
    sent = json.dumps(fake.calls[0])
    assert "role" in sent and "staff_count" in sent  # names and roles are sent
    for value in ("Registered Nurse", "Physician", "40", "sample_rows"):
        assert value not in sent
    assert spec.privacy == privacy


# -- end to end: the query pipeline writes the chart; Dagster shows it ---------------------------


def test_an_answered_question_gets_its_chart_in_files_answer_and_dagster(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster import DagsterInstance, materialize

    from dia_assets.contracts.query_result import QueryResult
    from dia_assets.dagster.query import query_result_asset, register_question_partitions
    from dia_assets.dagster.resources import LLMResource, WorkspaceResource
    from tests.query_fixtures import FAKE_MODEL, build_example_warehouse, call, register_tools

    root = tmp_path / "ws"
    build_example_warehouse(root / "warehouse.duckdb")
    questions = tmp_path / "questions.yaml"
    questions.write_text("- id: staff_per_role\n  question: How many staff members do we have in each role?\n")
    monkeypatch.setenv("DIA_QUESTIONS", str(questions))
    monkeypatch.delenv("DIA_WAREHOUSE", raising=False)
    monkeypatch.delenv("DIA_CHART_MODEL", raising=False)
    instance = DagsterInstance.ephemeral()
    register_question_partitions(instance)
    register_tools([
        call("declare_contract", kind="analytical", columns=["role", "staff_count"],
             granularity={"description": "role", "key_columns": ["role"]}),
        call("submit", sql="SELECT role, COUNT(*) AS staff_count FROM staff GROUP BY role ORDER BY role"),
    ])
    run = materialize([query_result_asset(with_memory=False)], instance=instance, partition_key="staff_per_role",
                      resources={"workspace": WorkspaceResource(root=str(root)), "llm": LLMResource(model=FAKE_MODEL)})
    meta = run.asset_materializations_for_node("query_result")[0].metadata
    assert meta["chart_kind"].value == "bar"
    assert meta["chart"].value.startswith("![bar chart](data:image/png;base64,")
    folder = root / "queries" / "staff_per_role"
    assert ink_fraction((folder / "chart.png").read_bytes()) > 0.01
    assert (folder / "chart.svg").exists() and meta["path/chart_png"].value == str(folder / "chart.png")
    answer = (folder / "answer.md").read_text()
    assert "![bar chart](chart.png)" in answer and "bar chosen by the rules: staff_count per role" in answer
    result = QueryResult.read(folder / "result.json")
    assert result.chart is not None and result.chart.kind == "bar" and result.chart.x == "role"
    assert json.loads((folder / "trace.json").read_text())["chart"]["spec"]["kind"] == "bar"


def test_the_chart_model_pass_runs_after_an_answer_and_is_traced(tmp_path: Path) -> None:
    from dia_assets.agents.query.run import answer_question
    from dia_assets.platform.model.litellm import litellm_chat
    from tests.query_fixtures import FAKE_MODEL, build_example_warehouse, call, register_tools

    wh = build_example_warehouse(tmp_path / "warehouse.duckdb")
    register_tools([
        call("declare_contract", kind="analytical", columns=["role", "staff_count"],
             granularity={"description": "role", "key_columns": ["role"]}),
        call("submit", sql="SELECT role, COUNT(*) AS staff_count FROM staff GROUP BY role"),
    ])
    seen: list[list[dict[str, Any]]] = []

    def model(messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        seen.append(messages)
        return (json.dumps({"kind": "stacked_bar", "y": ["staff_count"], "series": "role",
                            "reason": "the staff as one whole split by role"}),
                {"model": "scripted", "prompt_tokens": 100, "completion_tokens": 20, "cost_usd": 0.5})

    result, _ = answer_question("What is the make-up of our staff by role?", wh, chat=litellm_chat(FAKE_MODEL),
                                workspace=tmp_path, question_id="mix", chart_model=model)
    assert result.status == "answered" and result.chart is not None
    assert (result.chart.kind, result.chart.chosen_by, result.chart.rule_kind) == ("stacked_bar", "model", "bar")
    assert len(seen) == 1 and result.tokens.cost_usd >= 0.5  # the chart call is counted with the answer's
    answer = (tmp_path / "queries" / "mix" / "answer.md").read_text()
    assert "chosen by the model: the staff as one whole split by role" in answer
    assert "the rules chose bar" in answer
    trace = json.loads((tmp_path / "queries" / "mix" / "trace.json").read_text())
    assert trace["chart"]["model_calls"][0]["prompt_tokens"] == 100


def test_non_finite_values_render_as_gaps(tmp_path: Path) -> None:
    rows = [(dt.date(2026, 1, d), v) for d, v in zip(range(1, 6), [1.0, float("nan"), 3.0, float("inf"), 2.0], strict=True)]
    done = render_chart(rule_chart(["day", "rate"], rows), ["day", "rate"], rows, tmp_path)
    assert done.kind == "line" and ink_fraction((tmp_path / "chart.png").read_bytes()) > 0.01
