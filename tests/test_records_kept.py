"""Every record the source holds reaches a refined or a reject table, or an issue stops the build.

Each test builds a real warehouse from real files (`build.run`) and counts what arrived in the
staging, refined and reject tables: a record cut short at the end of a file, a header-skip a schema
file declares over a file without a header, Excel formulas saved without their values, NUL bytes
inside values, JSON keys given twice, and gzip/zstd compressed files.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import zipfile
from pathlib import Path

import duckdb
import openpyxl
import psycopg
import pytest
import zstandard

from dia_assets.agents.schema_creator.load import LoadError
from dia_assets.pipeline import BuildResult, run
from dia_assets.platform.files.excel_formulas import unvalued_formulas
from dia_assets.platform.files.final_record import _unterminated, cut_final_record
from tests.memory_fixtures import fresh_database_url, pg_server  # noqa: F401  (fixture)


def _build(tmp_path: Path, files: dict[str, bytes], seed: str | None = None, ws: str = "ws") -> BuildResult:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    for name, content in files.items():
        (data / name).write_bytes(content)
    overrides = None
    if seed is not None:
        overrides = tmp_path / "overrides.yaml"
        overrides.write_text(seed)
    return run(data, tmp_path / ws, overrides_seed=overrides)


def _rows(result: BuildResult, sql: str) -> list[tuple]:
    con = duckdb.connect(result.load.warehouse, read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _counts(result: BuildResult, table: str) -> tuple[int, int, int]:
    """(staging, refined, rejects) rows of `table` in the warehouse."""
    return _rows(result, f'SELECT (SELECT count(*) FROM staging."{table}"), (SELECT count(*) FROM "{table}"), '
                         f'(SELECT count(*) FROM rejects."{table}")')[0]


def _issues(result: BuildResult, kind: str) -> list:
    interp = json.loads((result.paths["report"].parents[1] / "interpretation.json").read_text())
    return [i for i in interp["quality_issues"] if i["kind"] == kind]


def _load_integrity(result: BuildResult, table: str) -> str:
    return next(r.message for r in result.report.load_integrity if r.table == table)


# ---------------------------------------------------------------- a record cut short

BODY = "".join(f"{i},{2000 + i * 13},note {i}\n" for i in range(1, 41))


def test_a_csv_cut_inside_its_last_record_is_not_accepted_and_the_record_is_rejected(tmp_path):
    """`41,2` of `41,2533,...`: a good-looking row that is not in the export. It goes to the reject
    table with its text; the build is not accepted until the whole file is there."""
    result = _build(tmp_path, {"t.csv": ("id,amount,note\n" + BODY + "41,2").encode()})
    assert not result.report.accepted
    assert _counts(result, "t") == (40, 40, 1)
    assert _rows(result, "SELECT count(*) FROM t WHERE id = 41") == [(0,)]
    raw, reason = _rows(result, "SELECT _raw_line, _reason FROM rejects.t")[0]
    assert raw == "41,2" and "truncated record" in reason
    issue = _issues(result, "truncated_record")[0]
    assert issue["severity"] == "error" and issue["blocking"]
    assert issue["message"].startswith("t.csv: the file ends inside line 42 ('41,2')")
    assert "t.csv: the file ends inside line 42" in _load_integrity(result, "t")
    # the writer finishes: the same workspace builds to accepted, with the whole record
    (tmp_path / "data" / "t.csv").write_text("id,amount,note\n" + BODY + "41,2533,note 41\n")
    again = run(tmp_path / "data", tmp_path / "ws")
    assert again.report.accepted and _counts(again, "t") == (41, 41, 0)
    assert _rows(again, "SELECT amount FROM t WHERE id = 41") == [(2533,)]


def test_a_last_record_short_of_fields_without_its_line_end_is_cut_too(tmp_path):
    result = _build(tmp_path, {"t.csv": ("id,amount,note\n" + BODY + "41,25").encode()})
    assert not result.report.accepted and _counts(result, "t") == (40, 40, 1)
    assert _issues(result, "truncated_record")[0]["examples"] == ["line 42: 41,25"]


def test_a_bulk_copy_export_cut_inside_its_last_record_is_not_accepted(tmp_path):
    rows = "".join(f"{i}+|name {i}+|{i * 7}&|\n" for i in range(1, 31))
    other = "".join(f"{i}+|{i}&|\n" for i in range(1, 4))  # the rest of the export ends its records
    result = _build(tmp_path, {"b.dat": (rows + "31+|name 31+|2").encode(), "c.dat": other.encode()})
    assert not result.report.accepted
    assert _counts(result, "b") == (30, 30, 1)
    assert _rows(result, "SELECT _raw_line FROM rejects.b") == [("31+|name 31+|2",)]


def test_a_json_lines_file_cut_inside_its_last_line_is_not_accepted(tmp_path):
    lines = "".join(json.dumps({"id": i, "v": f"x{i}"}) + "\n" for i in range(1, 21))
    result = _build(tmp_path, {"e.jsonl": (lines + '{"id": 21, "v": "x').encode()})
    assert not result.report.accepted
    assert _counts(result, "e") == (20, 20, 1)
    assert _issues(result, "truncated_record")[0]["examples"] == ['line 21: {"id": 21, "v": "x']


@pytest.mark.parametrize(("content", "terminator", "cut"), [
    (b"a,b\n1,2\n", "\n", None),
    (b"a,b\r\n1,2\r\n", "\r\n", None),
    (b"a,b\n1,2\n\n  \n", "\n", None),  # blank lines after the last record
    (b"a,b", "\n", None),  # one record, no line end anywhere: nothing says it is cut
    (b"a,b\n1,2", "\n", (4, 2, "1,2")),
    (b"a,b\r\n1,2\r\n3,", "\r\n", (10, 3, "3,")),
    (b"a,b\r1,2\r3,4", "\r", (8, 3, "3,4")),
    (b"a,b\n1,x\n2,Ren\xe9", "\n", (8, 3, "2,Ren\u00e9")),  # decoded as the reader decodes lines
    (b"1+|x&|\n2+|y&|\n", "&|\n", None),
    (b"1+|x&|\n2+|y&|", "&|\n", None),  # the terminator without its newline ends the record
    (b"1+|x&|\n2+|multi\nline", "&|\n", (7, 2, "2+|multi\nline")),
])
def test_the_final_record_check(tmp_path, content, terminator, cut):
    path = tmp_path / "f.csv"
    path.write_bytes(content)
    found = _unterminated(path, terminator, "cp1252")
    assert (None if found is None else (found.offset, found.line, found.text)) == cut


def test_a_cut_last_line_longer_than_the_tail_block_is_found(tmp_path):
    path = tmp_path / "f.csv"
    path.write_bytes(b"a,b\n1,2\n3," + b"x" * 300_000)
    found = _unterminated(path, "\n", "cp1252")
    assert found is not None and (found.offset, found.line) == (8, 3) and len(found.text) == 300_002


def test_a_complete_last_record_without_a_line_end_is_data_unless_the_export_says_otherwise(tmp_path):
    """Many tools end a complete file without a line end: with the record's fields all there and
    no other file of the folder to say the export ends its files with one, the record is data."""
    (tmp_path / "f.csv").write_bytes(b"a,b\n1,2\n3,4")
    assert cut_final_record(tmp_path / "f.csv", "\n", fields=2) is None
    assert cut_final_record(tmp_path / "f.csv", "\n", fields=3) is not None  # short of a field
    (tmp_path / "g.csv").write_bytes(b"a,b\n1,2\n")  # the rest of the export ends its files
    assert cut_final_record(tmp_path / "f.csv", "\n", fields=2).text == "3,4"
    (tmp_path / "h.csv").write_bytes(b"a,b\n1,2")
    (tmp_path / "i.csv").write_bytes(b"a,b\n1,2")
    assert cut_final_record(tmp_path / "f.csv", "\n", fields=2) is None  # this export does not
    (tmp_path / "alone").mkdir()
    result = _build(tmp_path / "alone", {"t.csv": b"id,v\n1,2\n3,4"})
    assert result.report.accepted and _counts(result, "t") == (2, 2, 0)


# ---------------------------------------------------------------- a declared header-skip


def test_a_declared_header_skip_over_a_file_without_header_keeps_the_first_record(tmp_path):
    """`BULK INSERT ... FIRSTROW = 2` over a file whose first line is data: the line is a record."""
    sql = ("CREATE TABLE towns (id INT PRIMARY KEY, name VARCHAR(20), people INT);\n"
           "BULK INSERT towns FROM 'towns.csv' WITH (FIELDTERMINATOR = ',', FIRSTROW = 2);\n")
    rows = "".join(f"{i},town {i},{i * 1000}\n" for i in range(1, 11))
    result = _build(tmp_path, {"towns.csv": rows.encode(), "load.sql": sql.encode()})
    assert result.report.accepted
    assert _counts(result, "towns") == (10, 10, 0)
    assert _rows(result, "SELECT name, people FROM towns WHERE id = 1") == [("town 1", 1000)]
    issue = _issues(result, "declared_header_is_data")[0]
    assert issue["message"].startswith("towns.csv: load.sql declares a header line to skip, but the first line is data")


def test_a_declared_header_skip_over_a_header_skips_it(tmp_path):
    sql = ("CREATE TABLE towns (id INT PRIMARY KEY, name VARCHAR(20), people INT);\n"
           "BULK INSERT towns FROM 'towns.csv' WITH (FIELDTERMINATOR = ',', FIRSTROW = 2);\n")
    rows = "Town No,Town Name,Population\n" + "".join(f"{i},town {i},{i * 1000}\n" for i in range(1, 11))
    result = _build(tmp_path, {"towns.csv": rows.encode(), "load.sql": sql.encode()})
    assert result.report.accepted and _counts(result, "towns") == (10, 10, 0)
    assert _issues(result, "declared_header_is_data") == []


# ---------------------------------------------------------------- Excel formulas without values


def _workbook(cached: bool) -> bytes:
    """A sheet whose `total` column is formulas; `cached`: with the values Excel would save."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Sales"
    ws.append(["id", "qty", "price", "total"])
    for i in range(1, 5):
        ws.append([i, i * 2, 1.5, f"=B{i + 1}*C{i + 1}"])
    buf = io.BytesIO()
    wb.save(buf)
    if not cached:
        return buf.getvalue()
    out = io.BytesIO()
    with zipfile.ZipFile(buf) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "xl/worksheets/sheet1.xml":
                data = re.sub(rb"<f>B(\d)\*C\d</f><v\s*/>",
                              lambda m: b"<f>B%s*C%s</f><v>%d</v>" % (m[1], m[1], (int(m[1]) - 1) * 3), data)
            dst.writestr(item, data)
    return out.getvalue()


def test_formula_cells_without_saved_values_are_named_and_not_accepted(tmp_path):
    result = _build(tmp_path, {"book.xlsx": _workbook(cached=False)})
    assert not result.report.accepted
    assert _counts(result, "book_sales") == (4, 4, 0)  # every record is in the table
    issue = _issues(result, "formula_without_value")[0]
    assert issue["severity"] == "error" and issue["column"] == "total" and issue["count"] == 4
    assert issue["examples"][:2] == ["Sales!D2: =B2*C2", "Sales!D3: =B3*C3"]
    assert issue["message"].startswith("book.xlsx[Sales]: 4 formula cell(s) in column 'total' have no saved value")
    assert "formula cell(s) in column 'total'" in _load_integrity(result, "book_sales")


def test_formula_cells_with_saved_values_load_them(tmp_path):
    result = _build(tmp_path, {"book.xlsx": _workbook(cached=True)})
    assert result.report.accepted and _issues(result, "formula_without_value") == []
    assert _rows(result, "SELECT id, total FROM book_sales ORDER BY id") == [(1, 3), (2, 6), (3, 9), (4, 12)]


def test_excluding_the_formula_column_lifts_the_block(tmp_path):
    seed = "version: 1\ntables:\n  book_sales:\n    columns:\n      total:\n        exclude: computed in the report\n"
    result = _build(tmp_path, {"book.xlsx": _workbook(cached=False)}, seed=seed)
    assert result.report.accepted and _counts(result, "book_sales") == (4, 4, 0)


def test_shared_formulas_are_named_as_written_in_their_cell(tmp_path):
    """Excel stores a filled-down formula once (`t="shared"`); a string result '' is a value."""
    sheet = (b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
             b'<row r="1"><c r="A1" t="inlineStr"><is><t>v</t></is></c><c r="B1" t="inlineStr"><is><t>w</t></is></c>'
             b'<c r="C1" t="inlineStr"><is><t>s</t></is></c></row>'
             b'<row r="2"><c r="A2"><v>1</v></c><c r="B2"><f t="shared" ref="B2:B3" si="0">A2*2</f></c>'
             b'<c r="C2" t="str"><f>""</f><v></v></c></row>'
             b'<row r="3"><c r="A3"><v>2</v></c><c r="B3"><f t="shared" si="0"/></c></row>'
             b"</sheetData></worksheet>")
    wb = openpyxl.Workbook()
    wb.active.title = "S"
    buf = io.BytesIO()
    wb.save(buf)
    out = tmp_path / "s.xlsx"
    with zipfile.ZipFile(buf) as src, zipfile.ZipFile(out, "w") as dst:
        for item in src.infolist():
            dst.writestr(item, sheet if item.filename == "xl/worksheets/sheet1.xml" else src.read(item))
    cells = unvalued_formulas(out)["S"]
    assert [(c.coordinate, c.formula) for c in cells] == [("B2", "=A2*2"), ("B3", "=A3*2")]


# ---------------------------------------------------------------- NUL bytes


def test_nul_bytes_inside_values_of_a_quoted_csv_are_kept(tmp_path):
    content = b'id,name,note\n1,"b\x00c",x\n2,"plain",\x00\n3,"Ka\x00y","y"\n'
    result = _build(tmp_path, {"q.csv": content})
    assert result.report.accepted and _counts(result, "q") == (3, 3, 0)
    assert _rows(result, "SELECT id, name, note FROM q ORDER BY id") == [
        (1, "b\x00c", "x"), (2, "plain", "\x00"), (3, "Ka\x00y", "y")]


def test_a_bulk_copy_export_keeps_nul_inside_values_and_its_empty_string_marker(tmp_path):
    """bcp writes the empty string as a lone NUL; a NUL inside a value stays a NUL."""
    rows = "".join(f"{i}+|name {i}+|{'' if i % 3 else chr(0)}&|\n" for i in range(1, 10)) + "10+|b\x00c+|z&|\n"
    result = _build(tmp_path, {"b.dat": rows.encode()})
    assert result.report.accepted and _counts(result, "b") == (10, 10, 0)
    got = dict(_rows(result, "SELECT column_1, column_3 FROM b"))
    assert got[3] == "" and got[1] is None
    assert _rows(result, "SELECT column_2 FROM b WHERE column_1 = 10") == [("b\x00c",)]


@pytest.fixture
def pg_url(pg_server) -> str:  # noqa: F811
    return fresh_database_url(pg_server, f"records_{os.getpid()}")


def test_a_nul_byte_stops_a_postgresql_load_in_one_line_and_changes_nothing(tmp_path, pg_url):
    """PostgreSQL text cannot hold a NUL: the value is never altered to fit, the load stops."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "q.csv").write_bytes(b'id,name\n1,"plain"\n2,"also plain"\n')
    assert run(data, tmp_path / "ws", warehouse=pg_url).report.accepted
    (data / "q.csv").write_bytes(b'id,name\n1,"plain"\n2,"b\x00c"\n3,"x"\n')
    with pytest.raises(LoadError) as failed:
        run(data, tmp_path / "ws", warehouse=pg_url)
    assert str(failed.value).startswith("q.csv: a value of table 'q' holds a NUL byte, which PostgreSQL text")
    assert "\n" not in str(failed.value)
    with psycopg.connect(pg_url) as con:
        assert con.execute("SELECT count(*) FROM public.q").fetchone()[0] == 2


# ---------------------------------------------------------------- JSON keys given twice


def test_json_keys_given_twice_are_named_and_not_accepted(tmp_path):
    array = b'[{"id": 1, "a": "x", "a": "y"}, {"id": 2, "a": "z"}, {"id": 3, "a": "w", "n": {"k": 1, "k": 2}}]'
    lines = b'{"id": 1, "b": "x"}\n{"id": 2, "b": "y", "b": "z"}\n'
    result = _build(tmp_path, {"j.json": array, "k.jsonl": lines})
    assert not result.report.accepted
    assert _counts(result, "j") == (3, 3, 0) and _counts(result, "k") == (2, 2, 0)
    by_source = {i["source"]: i for i in _issues(result, "duplicate_json_keys")}
    assert by_source["j"]["count"] == 2
    assert by_source["j"]["examples"] == ["record 1: key 'a' given twice", "record 3: key 'k' given twice"]
    assert by_source["k"]["examples"] == ["line 2: key 'b' given twice"]
    assert by_source["k"]["message"].startswith("k.jsonl: 1 record(s) give a key twice (line 2: key 'b' given twice)")


def test_json_without_repeated_keys_is_accepted(tmp_path):
    records = [{"id": i, "a": f"v{i}", "n": {"k": i}} for i in range(1, 200)]
    result = _build(tmp_path, {"j.json": json.dumps(records).encode()})
    assert result.report.accepted and _issues(result, "duplicate_json_keys") == []


# ---------------------------------------------------------------- compressed files

CSV = "".join(f"{i},item {i},{i * 2.5}\n" for i in range(1, 31))


def test_gzip_and_zstd_files_are_read_as_the_files_they_hold(tmp_path):
    result = _build(tmp_path, {
        "orders.csv.gz": gzip.compress(("id,name,price\n" + CSV).encode()),
        "lines.csv.zst": zstandard.ZstdCompressor().compress(("id,name,price\n" + CSV).encode()),
        "events.jsonl.gz": gzip.compress("".join(json.dumps({"id": i}) + "\n" for i in range(1, 8)).encode()),
        "items.json.zst": zstandard.ZstdCompressor().compress(json.dumps([{"k": i} for i in range(5)]).encode()),
    })
    assert result.report.accepted
    assert {t.name: t.source_path for t in result.manifest.tables} == {
        "events": "events.jsonl.gz", "items": "items.json.zst", "lines": "lines.csv.zst", "orders": "orders.csv.gz"}
    assert _counts(result, "orders") == (30, 30, 0) and _counts(result, "lines") == (30, 30, 0)
    assert _counts(result, "events") == (7, 7, 0) and _counts(result, "items") == (5, 5, 0)
    assert _rows(result, "SELECT name, price FROM orders WHERE id = 30") == [("item 30", 75)]


def test_compressed_files_get_the_same_checks(tmp_path):
    """A cut record inside a gzip file and a bad JSON line inside a zstd file are reported by
    the name of the compressed file, and the bad line reaches the reject table."""
    lines = b'{"id": 1}\nnot json\n{"id": 3}\n'
    result = _build(tmp_path, {
        "t.csv.gz": gzip.compress(("id,name,price\n" + CSV + "31,it").encode()),
        "e.jsonl.zst": zstandard.ZstdCompressor().compress(lines),
    })
    assert not result.report.accepted
    assert _counts(result, "t") == (30, 30, 1) and _counts(result, "e") == (2, 2, 1)
    assert _issues(result, "truncated_record")[0]["message"].startswith("t.csv.gz: the file ends inside line 32")
    assert _rows(result, "SELECT _raw_line FROM rejects.e") == [("not json",)]


def test_a_compressed_file_that_does_not_decompress_is_an_error_and_not_accepted(tmp_path):
    cut = gzip.compress(("id,name,price\n" + CSV).encode())[:-12]  # cut while being written
    result = _build(tmp_path, {"ok.csv": b"id\n1\n", "t.csv.gz": cut, "book.xlsx.gz": b"zz"})
    assert not result.report.accepted
    issue = _issues(result, "unreadable_file")[0]
    assert issue["message"].startswith("t.csv.gz: does not decompress as gzip")
    assert "format .xlsx.gz is not read" in _issues(result, "unsupported_format")[0]["message"]
