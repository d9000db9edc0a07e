"""Charts a careful analyst would draw (issue 31): every chart kind the rules produce is
rendered from a small DuckDB result and checked rule by rule on the spec and on its Vega-Lite:
sorted categorical bars, no stack of a measure that does not add up, separate panels when
magnitudes differ by orders, big numbers that say what they are about, names kept whole, a
palette without repeats (one colour when colour encodes nothing), titles that fit. Then
`dia chart QUESTION_ID` charts a stored answer with no model configured."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from dia_assets.agents.charts.choose import (
    CATEGORICAL,
    SINGLE,
    choose_chart,
    litellm_chart_model,
    rule_chart,
)
from dia_assets.agents.charts.render import (
    TITLE_LINES,
    ink_fraction,
    render_chart,
    title_lines,
    vega_lite,
)
from dia_assets.contracts.chart import ChartSpec
from tests.fake_llm import register

COUNTRIES = ["Germany", "France", "Brazil", "USA", "Canada", "India", "Japan", "Chile", "Spain", "Italy", "Norway",
             "Poland", "Portugal", "Austria", "Belgium", "Denmark", "Finland", "Ireland", "Sweden", "Hungary",
             "Czech Republic", "Argentina", "Australia", "Netherlands"]


@pytest.fixture(scope="module")
def con() -> duckdb.DuckDBPyConnection:
    """A small music store: invoices per customer, country, genre and year; sales reps by name."""
    db = duckdb.connect()
    db.execute("CREATE TABLE country AS SELECT * FROM (VALUES " + ", ".join(
        f"({i}, '{c}')" for i, c in enumerate(COUNTRIES)) + ") t(country_id, name)")
    db.execute("""
        CREATE TABLE invoice AS
        SELECT i AS invoice_id, i % 24 AS country_id, (i * 7) % 60 AS customer_id,
               ['Rock', 'Jazz', 'Metal'][1 + (i * 5) % 3] AS genre,
               ['MPEG', 'AAC'][1 + i % 2] AS media,
               2015 + (i % 8) AS year,
               ['<18', '18-25', '26-40', '41-64', '65+'][1 + (i * 3) % 5] AS age_band,
               round(0.99 * (1 + (i * 13) % 17), 2)::DECIMAL(10, 2) AS amount
        FROM range(600) r(i)""")
    db.execute("""CREATE TABLE rep AS SELECT * FROM (VALUES
        (1, 'Jane', 'Peacock', 'jane@x.org'), (2, 'Margaret', 'Park', 'mp@x.org'),
        (3, 'Steve', 'Johnson', 'sj@x.org')) t(rep_id, first_name, last_name, email)""")
    db.execute("CREATE TABLE sale AS SELECT i AS sale_id, 1 + (i * 7) % 3 AS rep_id, 10.0 + i AS amount "
               "FROM range(30) r(i)")
    return db


def run(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[list[str], list[tuple[Any, ...]]]:
    cur = con.execute(sql)
    return [d[0] for d in cur.description], cur.fetchall()


def chart(con: duckdb.DuckDBPyConnection, sql: str, question: str = "q",
          **kw: Any) -> tuple[ChartSpec, dict[str, Any] | None, list[str], list[tuple[Any, ...]]]:
    columns, rows = run(con, sql)
    spec = choose_chart(question, columns, rows, sql=sql, **kw)
    return spec, vega_lite(spec, columns, rows), columns, rows


def units(vl: dict[str, Any]) -> list[dict[str, Any]]:
    """The drawn views of a Vega-Lite spec: itself, or its concatenated panels or layers."""
    for key in ("vconcat", "hconcat", "layer"):
        if key in vl:
            return vl[key]
    return [vl]


def x_order(vl: dict[str, Any]) -> list[Any]:
    enc = units(vl)[0]["encoding"]
    cat = enc["x"] if enc["x"].get("type") == "nominal" else enc["y"]
    return cat["sort"]


# -- every kind, with the rules that apply to all -------------------------------------------------

KINDS = {
    "bar": ("SELECT c.name AS country, SUM(amount) AS total FROM invoice JOIN country c USING (country_id) "
            "GROUP BY 1 ORDER BY 1", "bar"),
    "grouped bar": ("SELECT c.name AS country, genre, COUNT(DISTINCT customer_id) AS customers FROM invoice "
                    "JOIN country c USING (country_id) WHERE country_id < 5 GROUP BY 1, 2 ORDER BY 1, 2", "bar"),
    "stacked bar": ("SELECT c.name AS country, media, SUM(amount) AS total FROM invoice JOIN country c "
                    "USING (country_id) WHERE country_id < 5 GROUP BY 1, 2 ORDER BY 1, 2", "stacked_bar"),
    "stacked whole": ("SELECT genre, 100.0 * COUNT(*) / SUM(COUNT(*)) OVER () AS pct_of_invoices FROM invoice "
                      "GROUP BY 1 ORDER BY 1", "stacked_bar"),
    "line": ("SELECT year, SUM(amount) AS total FROM invoice GROUP BY 1 ORDER BY 1", "line"),
    "line per series": ("SELECT year, media, SUM(amount) AS total FROM invoice GROUP BY 1, 2 ORDER BY 1, 2", "line"),
    "line in panels": ("SELECT year, SUM(amount) * 1000 AS total, COUNT(DISTINCT customer_id) AS customers "
                       "FROM invoice GROUP BY 1 ORDER BY 1", "line"),
    "scatter": ("SELECT customer_id::DOUBLE AS visits, SUM(amount) AS total FROM invoice GROUP BY 1", "scatter"),
    "big number": ("SELECT c.name AS country, SUM(amount) AS total FROM invoice JOIN country c USING (country_id) "
                   "GROUP BY 1 ORDER BY 2 DESC LIMIT 1", "big_number"),
    "table": ("SELECT first_name, last_name FROM rep", "table"),
}


def check_rules(spec: ChartSpec, vl: dict[str, Any] | None) -> None:
    """The rules every chart keeps, whatever its kind."""
    if spec.kind == "table":
        assert vl is None and spec.palette == "none"
        return
    assert vl is not None
    assert len(set(spec.colors)) == len(spec.colors) and spec.colors  # no colour used twice
    lines = vl["title"]["text"]
    assert 1 <= len(lines) <= TITLE_LINES and vl["description"] == spec.title  # full title kept
    for unit in units(vl):
        enc = unit.get("encoding", {})
        if "color" in enc:  # colour encodes something, with its own palette
            assert enc["color"]["scale"]["range"] == spec.colors[:len(enc["color"]["scale"]["domain"])]
        elif spec.kind != "big_number":
            assert unit["mark"]["color"] == SINGLE and spec.palette == "single"
        for channel in ("x", "y"):
            if enc.get(channel, {}).get("type") == "quantitative":
                stacked = enc[channel].get("stack")
                if stacked not in (None, False):
                    assert spec.kind == "stacked_bar"
                    assert all(c.additive for c in spec.columns if c.name in spec.y)  # only parts that add up
    if spec.kind in ("bar", "stacked_bar") and spec.x is not None:
        shape = next(c for c in spec.columns if c.name == spec.x)
        assert spec.sort == ("ordinal" if shape.ordinal else "descending")


@pytest.mark.parametrize("case", sorted(KINDS))
def test_every_kind_renders_and_keeps_the_rules(case: str, con: duckdb.DuckDBPyConnection, tmp_path: Path) -> None:
    sql, kind = KINDS[case]
    spec, vl, columns, rows = chart(con, sql, f"Question about the {case}")
    assert spec.kind == kind, spec.reason
    check_rules(spec, vl)
    done = render_chart(spec, columns, rows, tmp_path)
    if kind == "table":
        assert done.files == {}
        return
    assert ink_fraction((tmp_path / "chart.png").read_bytes()) > 0.01 and not done.warnings
    assert f"Question about the {case}" in (tmp_path / "chart.svg").read_text()
    assert done.title_lines == [f"Question about the {case}"]


# -- sorted bars --------------------------------------------------------------------------------


def test_bars_in_engine_order_are_drawn_largest_first(con: duckdb.DuckDBPyConnection) -> None:
    spec, vl, columns, rows = chart(con, KINDS["bar"][0])
    assert [r[0] for r in rows] == sorted(COUNTRIES)  # the engine returned them alphabetically
    assert len(rows) == 24 and (spec.sort, spec.sort_by) == ("descending", "total")
    expected = [c for c, _ in sorted(rows, key=lambda r: -float(r[1]))]
    assert x_order(vl) == expected and expected != sorted(COUNTRIES)


def test_ordered_categories_keep_their_own_order(con: duckdb.DuckDBPyConnection) -> None:
    spec, vl, *_ = chart(con, "SELECT age_band, COUNT(*) AS invoices FROM invoice GROUP BY 1 ORDER BY 2 DESC")
    assert spec.sort == "ordinal" and next(c for c in spec.columns if c.name == "age_band").ordinal
    assert x_order(vl) == ["<18", "18-25", "26-40", "41-64", "65+"]


def test_stacked_and_grouped_bars_sort_categories_by_their_total(con: duckdb.DuckDBPyConnection) -> None:
    spec, vl, columns, rows = chart(con, KINDS["stacked bar"][0])
    totals: dict[str, float] = {}
    for country, _, total in rows:
        totals[country] = totals.get(country, 0.0) + float(total)
    assert x_order(vl) == sorted(totals, key=lambda c: -totals[c])


# -- no stacking of measures that do not add up ---------------------------------------------------


@pytest.mark.parametrize("measure", ["COUNT(DISTINCT customer_id)", "AVG(amount)", "SUM(amount) / COUNT(*)",
                                     "MAX(amount)"])
def test_a_measure_that_does_not_add_up_is_grouped_never_stacked(measure: str, con: duckdb.DuckDBPyConnection) -> None:
    sql = (f"SELECT c.name AS country, genre, {measure} AS v FROM invoice JOIN country c USING (country_id) "
           "WHERE country_id < 4 GROUP BY 1, 2")
    spec, vl, *_ = chart(con, sql)
    assert (spec.kind, spec.x, spec.series) == ("bar", "country", "genre"), spec.reason
    assert next(c for c in spec.columns if c.name == "v").additive is False
    enc = vl["encoding"]
    assert enc["xOffset"]["field"] == "series" and enc["y"]["stack"] is None  # side by side


def test_a_sum_split_into_parts_is_stacked(con: duckdb.DuckDBPyConnection) -> None:
    spec, vl, *_ = chart(con, KINDS["stacked bar"][0])
    assert spec.kind == "stacked_bar" and vl["encoding"]["y"]["stack"] == "zero"


def test_without_sql_the_name_tells_a_distinct_count_or_average() -> None:
    rows = [(c, g, 3 + i) for i, (c, g) in enumerate((c, g) for c in ("DE", "FR") for g in ("Rock", "Jazz"))]
    for name in ("distinct_customers", "avg_price", "pct_returned"):
        assert rule_chart(["country", "genre", name], rows).kind == "bar"
    assert rule_chart(["country", "genre", "invoices"], rows).kind == "stacked_bar"
    assert rule_chart(["country", "genre", "share"], rows, semantic_types={"share": "percentage"}).kind == "bar"


def test_a_model_may_not_stack_a_distinct_count(con: duckdb.DuckDBPyConnection) -> None:
    register([json.dumps({"kind": "stacked_bar", "x": "country", "y": ["customers"], "series": "genre",
                          "reason": "show the totals"})])
    columns, rows = run(con, KINDS["grouped bar"][0])
    spec = choose_chart("q", columns, rows, sql=KINDS["grouped bar"][0], model=litellm_chart_model("fake/chart"))
    assert spec.kind == "bar" and spec.chosen_by == "rules" and "does not add up" in spec.override_refused


# -- separate panels when magnitudes differ by orders ----------------------------------------------


def test_totals_and_small_changes_get_their_own_panels() -> None:
    columns = ["region", "total", "change"]
    rows = [("North", 2_200_000, 15_000), ("South", 1_800_000, 2_000), ("East", 900_000, 0), ("West", 1_200_000, 400)]
    spec = rule_chart(columns, rows)
    assert spec.kind == "bar" and spec.panels == [["total"], ["change"]]
    vl = vega_lite(spec, columns, rows)
    assert [p["encoding"]["y"]["title"] for p in vl["vconcat"]] == ["total", "change"]
    assert vl["resolve"]["scale"]["y"] == "independent"
    near = [("North", 2_200_000, 150_000), ("South", 1_800_000, 90_000)]  # 15x apart: one axis
    assert rule_chart(columns, near).panels == [["total", "change"]]
    assert "vconcat" not in vega_lite(rule_chart(columns, near), columns, near)


def test_a_line_of_a_total_and_a_count_is_split(con: duckdb.DuckDBPyConnection) -> None:
    spec, vl, *_ = chart(con, KINDS["line in panels"][0])
    assert spec.panels == [["total"], ["customers"]] and len(vl["vconcat"]) == 2


# -- big numbers say what they are about ------------------------------------------------------------


def test_a_big_number_carries_its_entity(con: duckdb.DuckDBPyConnection) -> None:
    spec, vl, columns, rows = chart(con, KINDS["big number"][0], "Which country was invoiced most?")
    country, total = rows[0]
    assert spec.kind == "big_number" and spec.label == ["country"]
    assert vl["data"]["values"][0]["about"] == country  # drawn under the number
    assert "country" in vl["title"]["subtitle"][0]


def test_a_big_number_about_a_person_names_them_whole(con: duckdb.DuckDBPyConnection) -> None:
    spec, vl, *_ = chart(con, "SELECT first_name, last_name, SUM(amount) AS sales FROM sale JOIN rep USING (rep_id) "
                              "GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 1")
    assert spec.kind == "big_number" and spec.label == ["name"]
    assert vl["data"]["values"][0]["about"] in {"Jane Peacock", "Margaret Park", "Steve Johnson"}


# -- an entity's name kept whole ------------------------------------------------------------------


def test_first_and_last_name_become_one_label(con: duckdb.DuckDBPyConnection) -> None:
    spec, vl, *_ = chart(con, "SELECT r.first_name, r.last_name, SUM(amount) AS sales FROM sale JOIN rep r "
                              "USING (rep_id) GROUP BY 1, 2")
    assert spec.combined == {"name": ["first_name", "last_name"]}
    assert (spec.kind, spec.x, spec.series) == ("bar", "name", None)  # not first on the axis, last as colour
    assert set(x_order(vl)) == {"Jane Peacock", "Margaret Park", "Steve Johnson"}


def test_name_parts_are_found_per_entity_and_not_in_other_columns() -> None:
    columns = ["customer_last_name", "customer_first_name", "email", "total"]
    rows = [("Silva", "Ana", "a@x", 3), ("Li", "Bo", "b@x", 5)]
    spec = rule_chart(columns, rows)
    assert spec.combined == {"customer_name": ["customer_first_name", "customer_last_name"]}
    vl = vega_lite(spec.model_copy(update={"kind": "bar", "x": "customer_name", "y": ["total"]}), columns, rows)
    assert {r["x"] for r in vl["data"]["values"]} == {"Ana Silva", "Bo Li"}
    camel = rule_chart(["FirstName", "LastName", "Total"], [("Ana", "Silva", 3), ("Bo", "Li", 5)])
    assert camel.combined == {"name": ["FirstName", "LastName"]} and camel.x == "name"
    assert rule_chart(["first_name", "last_name", "n"], [("a@x", "b@x", 1), ("c@x", "d@x", 2)],
                      semantic_types={"first_name": "email", "last_name": "email"}).combined == {}


# -- palette ----------------------------------------------------------------------------------------


def test_twelve_series_get_twelve_colours() -> None:
    rows = [(f"D{d}", f"S{s:02}", 1 + d + s) for d in range(3) for s in range(12)]
    spec = rule_chart(["dept", "team", "staff"], rows)
    assert spec.kind == "stacked_bar" and spec.palette == "categorical"
    assert len(set(spec.colors)) == 12 and spec.colors == CATEGORICAL[:12]
    assert len(set(vega_lite(spec, ["dept", "team", "staff"], rows)["encoding"]["color"]["scale"]["range"])) == 12


def test_one_colour_when_colour_encodes_nothing(con: duckdb.DuckDBPyConnection) -> None:
    spec, vl, *_ = chart(con, KINDS["bar"][0])
    assert spec.palette == "single" and spec.colors == [SINGLE]
    assert "color" not in vl["encoding"] and vl["mark"]["color"] == SINGLE


def test_ordered_series_get_a_sequential_palette(con: duckdb.DuckDBPyConnection) -> None:
    spec, vl, *_ = chart(con, "SELECT year, age_band, COUNT(*) AS invoices FROM invoice GROUP BY 1, 2")
    assert spec.kind == "line" and spec.series == "age_band" and spec.palette == "sequential"
    colour = vl["encoding"]["color"]
    assert colour["scale"]["domain"] == ["<18", "18-25", "26-40", "41-64", "65+"]  # light to dark in order
    assert len(set(colour["scale"]["range"])) == 5


# -- titles that fit --------------------------------------------------------------------------------


def test_a_long_title_is_wrapped_and_shortened_with_the_full_text_kept(con: duckdb.DuckDBPyConnection,
                                                                        tmp_path: Path) -> None:
    question = ("For every one of the twenty-four countries in which the music store has at least one customer, "
                "what was the total amount invoiced over the whole period covered by the invoices table, in dollars?")
    spec, vl, columns, rows = chart(con, KINDS["bar"][0], question)
    lines = vl["title"]["text"]
    assert len(lines) == TITLE_LINES and lines[-1].endswith("…") and all(len(x) <= 62 for x in lines)
    assert vl["description"] == question and spec.title == question
    done = render_chart(spec, columns, rows, tmp_path)
    assert done.title_lines == lines and question in (tmp_path / "chart.svg").read_text()  # aria description
    assert title_lines("Short one") == ["Short one"]


# -- `dia chart QUESTION_ID`: a stored answer charted with no model ---------------------------------


def _stored_answer(workspace: Path, con: duckdb.DuckDBPyConnection, qid: str, sql: str, question: str) -> None:
    from dia_assets.agents.query.dialects import QueryOutput
    from dia_assets.agents.query.run import write_artifacts
    from dia_assets.contracts.query_result import QueryResult

    columns, rows = run(con, sql)
    result = QueryResult(question_id=qid, question=question, status="answered", sql=sql, columns=columns,
                         row_count=len(rows))
    write_artifacts(result, QueryOutput(columns=columns, rows=rows), None, workspace / "queries" / qid)
    (workspace / "queries" / qid / "chart.png").unlink()  # as if charted before the rules improved


def test_dia_chart_renders_a_stored_answer_without_a_model(con: duckdb.DuckDBPyConnection, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from dia_assets.cli.app import app
    from dia_assets.contracts.query_result import QueryResult

    ws = tmp_path / "ws"
    monkeypatch.delenv("DIA_MODEL", raising=False)
    monkeypatch.delenv("DIA_CHART_MODEL", raising=False)
    _stored_answer(ws, con, "per_country", KINDS["bar"][0], "Total invoiced per country?")
    fake = register(['{"keep": true}'])
    cli = CliRunner()

    res = cli.invoke(app, ["chart", "per_country", "-w", str(ws)])
    assert res.exit_code == 0, res.output
    assert res.stdout.startswith("chart: bar: total per country")
    folder = ws / "queries" / "per_country"
    assert ink_fraction((folder / "chart.png").read_bytes()) > 0.01
    spec = ChartSpec.read(folder / "chart.json")
    assert spec.sort == "descending" and spec.chosen_by == "rules"
    assert QueryResult.read(folder / "result.json").chart == spec  # the answer points at the new chart
    assert "![bar chart](chart.png)" in (folder / "answer.md").read_text()

    html = tmp_path / "out" / "chart.html"
    res = cli.invoke(app, ["chart", "per_country", "-w", str(ws), "-o", str(html), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["files"] == {"html": str(html)}
    page = html.read_text()
    assert "<html" in page and "Ireland" in page and "vega" in page.lower()
    assert fake.calls == []  # no model was called

    res = cli.invoke(app, ["chart", "nope", "-w", str(ws)])
    assert res.exit_code == 1 and "no saved answer 'nope'" in res.stderr and "per_country" in res.stderr
    res = cli.invoke(app, ["chart", "per_country", "-w", str(ws), "-o", str(tmp_path / "x.gif")])
    assert res.exit_code == 2 and "unknown chart file type" in res.stderr


def test_pass_through_columns_take_the_warehouse_semantic_type(tmp_path: Path) -> None:
    from dia_assets.agents.charts.hints import workspace_semantic_types
    from dia_assets.contracts.manifest import Manifest, ManifestColumn, ManifestTable

    def col(name: str, semantic_type: str) -> ManifestColumn:
        return ManifestColumn(name=name, type="VARCHAR", source="rep", source_column=name, semantic_type=semantic_type)

    table = ManifestTable(name="rep", sources=["rep"], source_path="rep.csv", source_format="csv", content_hash="h",
                          staging_table="stg_rep", reject_table="rej_rep",
                          columns=[col("first_name", "categorical"), col("rep_id", "id"), col("share", "percentage")])
    Manifest(generated_at="now", data_dir="d", tables=[table]).write(tmp_path / "schema" / "manifest.json")
    lineage = {"first_name": ["rep.first_name"], "reps": ["rep.rep_id"], "share": ["main.rep.share"]}
    # COUNT(DISTINCT rep_id) AS reps is no id: only columns passed through unchanged take the type
    assert workspace_semantic_types(lineage, tmp_path) == {"first_name": "categorical", "share": "percentage"}
    assert workspace_semantic_types(lineage, tmp_path / "missing") == {}
