"""platform/markdown: one escaping rule for every Markdown table, and every view that shows data
(query previews, interpretation examples, lineage, manifests, evaluation failures) uses it."""

from __future__ import annotations

from pathlib import Path

import pytest

from dia_assets.platform.markdown import cell, table

HOSTILE = "a|b <NA>\r\nc\nd"
ESCAPED = "a\\|b &lt;NA> c d"


@pytest.mark.parametrize(("value", "expected"), [
    (None, ""),
    (3, "3"),
    ("a|b", "a\\|b"),
    ("one\ntwo\r\nthree\rfour", "one two three four"),
    ("<script>x</script>", "&lt;script>x&lt;/script>"),
    ("x < 3 and y <> 4", "x &lt; 3 and y &lt;> 4"),
    (HOSTILE, ESCAPED),
    # inside a code span Markdown shows text as written: `<` stays, the pipe is still escaped (GFM)
    ("null tokens `<NA>`, `a|b` < c", "null tokens `<NA>`, `a\\|b` &lt; c"),
    ("``a ` <b>`` <c>", "``a ` <b>`` &lt;c>"),
    ("a lone ` <b>", "a lone ` &lt;b>"),
])
def test_cell_escaping(value: object, expected: str) -> None:
    assert cell(value) == expected


def test_table_escapes_headers_and_values_and_aligns_numbers() -> None:
    got = table(["name", "n<1", "rows"], [["x|y", None, 3], ["<b>", "two\nlines", 10]], right={"rows"})
    assert got.splitlines() == [
        "| name | n&lt;1 | rows |",
        "|---|---|---:|",
        "| x\\|y |  | 3 |",
        "| &lt;b> | two lines | 10 |",
    ]


def _data_rows(markdown: str) -> list[str]:
    return [line for line in markdown.splitlines() if line.startswith("| ") and ESCAPED in line]


def test_query_preview_escapes_data() -> None:
    from dia_assets.agents.query.questions import markdown_table

    got = markdown_table(["v", "w"], [[HOSTILE, None]])
    assert got.splitlines()[2] == f"| {ESCAPED} |  |"


def test_interpretation_examples_are_escaped(tmp_path: Path) -> None:
    from dia_assets.agents.interpreter import interpret
    from dia_assets.agents.interpreter.render import to_markdown

    (tmp_path / "t.csv").write_text("id,code\n1,<b>\n2,x|y\n3,<b>\n", encoding="utf-8")
    md = to_markdown(interpret(tmp_path))
    row = next(line for line in md.splitlines() if line.startswith("| code |"))
    assert "&lt;b>" in row and "x\\|y" in row and "<b>" not in row
    assert row.count(" | ") == 8  # nine cells: the pipe in the data did not add one


def test_lineage_tables_escape_data() -> None:
    from dia_assets.agents.lineage.render import answers_table
    from dia_assets.contracts.lineage import AnswerReads

    md = answers_table([AnswerReads(question_id="q1", question=HOSTILE, status="answered")])
    assert len(_data_rows(md)) == 1


def test_manifest_lineage_keeps_code_spans_readable() -> None:
    from dia_assets.agents.schema_creator.markdown import lineage_markdown
    from dia_assets.contracts.manifest import ManifestColumn, ManifestTable, ValueFormat

    col = ManifestColumn(name="v", type="VARCHAR", source="t", source_column="v",
                         value_format=ValueFormat(null_tokens=["<NA>"]))
    t = ManifestTable(name="t", sources=["t"], source_path="t.csv", source_ref="t<1>.csv", source_format="csv", content_hash="h",
                      staging_table="stg_t", reject_table="rej_t", source_columns=["v"], columns=[col])
    row = lineage_markdown(t).splitlines()[2]
    assert row == "| v | t&lt;1>.csv.v | cast to VARCHAR; null tokens `<NA>` |"


def test_evaluation_failures_escape_data() -> None:
    from dia_assets.agents.evaluation.models import FAILURE_CLASSES, InstanceRecord
    from dia_assets.agents.evaluation.report import render_markdown, summarize

    record = InstanceRecord(id="i1", question="q", status="incorrect", failure_class=FAILURE_CLASSES[0],
                            failure_detail=HOSTILE)
    md = render_markdown(summarize([record]), [record])
    assert len(_data_rows(md)) == 1
