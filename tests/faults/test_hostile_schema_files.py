"""Schema files are input like any other (issue: safety round 2, items 4, 6 and 8): they follow
the data files' rules, their parse is bounded, and one bad schema file never stops the data files
from being read. Also two reader probes of the same review: a JSON array of mixed values and a
UTF-8 BOM over lines in another encoding."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.interpreter import interpret
from dia_assets.pipeline import run
from dia_assets.platform.files import declared


def _data(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "t.csv").write_text("id,name\n1,a\n2,b\n", encoding="utf-8")
    return folder


def _issues(interp, kind: str) -> list:  # noqa: ANN001
    return [i for i in interp.quality_issues if i.kind == kind]


@pytest.fixture(autouse=True)
def _fresh_cache():
    declared._cached.cache_clear()
    yield
    declared._cached.cache_clear()


def test_deep_parentheses_are_refused_and_the_data_is_read(tmp_path):
    data = _data(tmp_path / "data")
    (data / "deep.sql").write_text("CREATE TABLE t (id integer CHECK (" + "(" * 20_000 + "1" + ")" * 20_000 + "));",
                                   encoding="utf-8")
    interp = interpret(data)
    assert interp.source("t").row_count == 2 and interp.source("t").parse.ok
    (issue,) = _issues(interp, "schema_file_unreadable")
    assert "deep.sql" in issue.message and "nests parentheses" in issue.message


def test_a_schema_file_that_breaks_the_parser_leaves_the_data_readable(tmp_path, monkeypatch):
    data = _data(tmp_path / "data")
    (data / "schema.sql").write_text("CREATE TABLE t (id integer PRIMARY KEY, name text);", encoding="utf-8")

    def broken(path: Path) -> declared.SchemaFile:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(declared, "read_schema_file", broken)
    interp = interpret(data)
    assert interp.source("t").row_count == 2 and interp.source("t").primary_key.source == "inferred"
    (issue,) = _issues(interp, "schema_file_unreadable")
    assert "RecursionError" in issue.message and "schema.sql" in issue.message


def test_size_and_time_limits_are_reported(tmp_path, monkeypatch):
    data = _data(tmp_path / "data")
    alters = "".join(f"ALTER TABLE t ADD CONSTRAINT k{i} PRIMARY KEY (id);\n" for i in range(2_000))
    (data / "schema.sql").write_text("CREATE TABLE t (id integer, name text);\n" + alters, encoding="utf-8")
    monkeypatch.setattr(declared, "MAX_SCHEMA_TEXT", 4_000)
    monkeypatch.setattr(declared, "MAX_SECONDS", 0.0)
    interp = interpret(data)
    messages = [i.message for i in _issues(interp, "schema_file_unreadable")]
    assert any("only the first" in m for m in messages) and any("were not read" in m for m in messages)
    assert interp.source("t").row_count == 2


def test_a_long_statement_is_read_by_the_regular_expressions(tmp_path, monkeypatch):
    """A huge CREATE TABLE skips sqlglot (whose cost grows with it) and still gives the key."""
    data = _data(tmp_path / "data")
    (data / "schema.sql").write_text("CREATE TABLE t (id integer, name text, PRIMARY KEY (name));",
                                     encoding="utf-8")
    monkeypatch.setattr(declared, "MAX_STATEMENT", 10)
    calls: list[str] = []
    parse = declared._parse_ddl
    monkeypatch.setattr(declared, "_parse_ddl", lambda s: calls.append(s) or parse(s))
    interp = interpret(data)
    assert interp.source("t").primary_key.columns == ["name"] and interp.source("t").primary_key.source == "declared"
    assert not calls


def test_a_schema_file_linked_from_outside_is_refused(tmp_path):
    data = _data(tmp_path / "data")
    outside = tmp_path / "outside.sql"
    outside.write_text("CREATE TABLE t (id integer, name text, PRIMARY KEY (name));", encoding="utf-8")
    (data / "schema.sql").symlink_to(outside)
    interp = interpret(data)
    assert interp.source("t").primary_key.source == "inferred"  # not applied
    (issue,) = _issues(interp, "refused_file")
    assert "schema.sql" in issue.message and "outside the data folder" in issue.message


def test_json_array_of_mixed_values_is_read(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "values.json").write_text('[1,2,3,"x"]', encoding="utf-8")
    src = interpret(data).source("values")
    assert src.parse.ok and src.row_count == 4
    assert run(data, tmp_path / "ws").report.accepted
    con = duckdb.connect(str(tmp_path / "ws" / "warehouse.duckdb"), read_only=True)
    assert sorted(r[0] for r in con.execute("SELECT * FROM \"values\"").fetchall()) == ['"x"', "1", "2", "3"]


def test_utf8_bom_over_cp1252_lines_is_read_line_by_line(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "bom.csv").write_bytes(b"\xef\xbb\xbfid,name\n1,caf\xe9\n2,ok\n")
    result = run(data, tmp_path / "ws")
    assert result.report.accepted
    con = duckdb.connect(str(tmp_path / "ws" / "warehouse.duckdb"), read_only=True)
    assert con.execute("SELECT id, name FROM bom ORDER BY id").fetchall() == [(1, "café"), (2, "ok")]
