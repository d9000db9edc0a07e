"""Nothing lost on wide and awkward reads (issue 27): records are counted from the file's bytes
(`platform/files/record_count.py`) with DuckDB's rules, apart from the reader they check; the read
buffer is sized from the longest record; a record over DIA_CSV_MAX_RECORD is refused by line; and
a record the reader does not account for is `records_lost`, in the interpreter and in the build."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.interpreter import interpret
from dia_assets.pipeline import run
from dia_assets.platform.files.record_count import count_records

# name -> (bytes, columns). Each is a case a line count or quote parity gets wrong, or a rule of
# DuckDB's: quotes open a field only at its start, quoted fields hold line ends, blank lines are
# skipped in a multi-column file but are records in a one-column file, lone CR ends a record.
CASES = {
    "quote_inside_value": (b'id,note\n1,ab"c\n2,x\n3,"y"\n', 2),  # parity would open a quote at ab"c
    "quoted_line_ends": (b'id,note\n1,"two\nlines"\n2,"crlf\r\ninside"\n3,"q""\n"\n', 2),
    "crlf": (b"id,note\r\n1,a\r\n2,b\r\n", 2),
    "lone_cr": (b"id,note\r1,a\r2,b\r", 2),
    "no_final_line_end": (b"id,note\n1,a\n2,b", 2),
    "blank_lines": (b"id,note\n1,a\n\n2,b\n\n\n3,c\n\n", 2),
    "one_column_blanks": (b"id\n1\n\n2\n\n", 1),
    "spaces_line": (b"id,note\n1,a\n   \n2,b\n", 2),
    "escaped_quotes_across_lines": (b'id,note\n1,"a "" b\n"" c"\n2,"d"\n', 2),
}


def _duckdb_records(path: Path) -> int:
    """Rows DuckDB reads + lines it rejects + the header line."""
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_csv('{path}', delim=',', quote='\"', escape='\"', "
                "header=true, all_varchar=true, store_rejects=true, rejects_table='r', rejects_scan='s')")
    rows = con.execute("SELECT count(*) FROM t").fetchone()[0]
    bad = con.execute("SELECT count(DISTINCT line) FROM r").fetchone()[0]
    return rows + bad + 1


@pytest.mark.parametrize("name", list(CASES))
def test_records_are_counted_as_duckdb_splits_them(tmp_path: Path, name: str) -> None:
    content, columns = CASES[name]
    path = tmp_path / f"{name}.csv"
    path.write_bytes(content)
    expected = _duckdb_records(path)
    for block in (3, 7, 1 << 20):  # blocks that cut records, quoted fields and CR LF pairs
        assert count_records(path, ",", columns, block=block).records == expected, block


def _parity_count(content: bytes) -> int:
    """Line ends after an even number of quotes: right for well-formed files only."""
    quotes = 0
    records = 0
    for byte in content:
        quotes += byte == ord('"')
        records += byte == ord("\n") and quotes % 2 == 0
    return records


def test_a_line_count_or_quote_parity_would_miscount(tmp_path: Path) -> None:
    """The cases above are not trivially right: the naive counts differ from DuckDB's."""
    for name, naive in (("quote_inside_value", _parity_count), ("quoted_line_ends", lambda c: c.count(b"\n")),
                        ("blank_lines", lambda c: c.count(b"\n"))):
        content, _ = CASES[name]
        path = tmp_path / f"{name}.csv"
        path.write_bytes(content)
        assert naive(content) != _duckdb_records(path), name
        assert count_records(path, ",", 2).records == _duckdb_records(path), name


def test_longest_record_and_its_line(tmp_path: Path) -> None:
    path = tmp_path / "long.csv"
    path.write_bytes(b'id,blob\n1,short\n2,"' + b"x\n" * 50 + b'"\n3,y\n')
    counted = count_records(path, ",", 2, block=16)
    assert counted.records == 4
    assert counted.longest == len(b'2,"' + b"x\n" * 50 + b'"') and counted.longest_line == 3


def _folder(tmp_path: Path, files: dict[str, bytes]) -> Path:
    data = tmp_path / "data"
    data.mkdir()
    for name, content in files.items():
        (data / name).write_bytes(content)
    return data


def _issues(interp, kind: str) -> list:  # noqa: ANN001
    return [i for i in interp.quality_issues if i.kind == kind]


def test_every_record_is_accounted_for_on_awkward_files(tmp_path: Path) -> None:
    data = _folder(tmp_path, {f"{n}.csv": c for n, (c, cols) in CASES.items() if cols > 1})
    interp = interpret(data)
    assert not _issues(interp, "records_lost")
    for source in interp.sources:
        assert source.parse.records == source.row_count + source.parse.bad_rows, source.name


def test_a_truncated_final_record_is_counted_and_rejected(tmp_path: Path) -> None:
    data = _folder(tmp_path, {"orders.csv": b"id,amount,note\n1,10,a\n2,20,b\n3,3"})
    interp = interpret(data)
    src = interp.source("orders")
    assert src.row_count == 2 and src.parse.bad_rows == 1 and src.parse.records == 3
    assert not _issues(interp, "records_lost")
    result = run(data, tmp_path / "ws")
    assert result.manifest.table("orders").source_records == 3
    counts = {r.table: r for r in result.report.row_counts}
    assert counts["orders"].passed and counts["orders"].source_rows == 3  # 2 rows + the cut line
    assert not result.report.accepted  # the cut record itself blocks, as before


def test_a_record_the_reader_skips_is_records_lost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A reader that drops a record silently (here DuckDB told that `#` starts a comment, as its
    sniffer may decide) is caught against the byte count, naming the file and both numbers."""
    from dia_assets.platform.files import readers

    real = readers.csv_options_sql
    monkeypatch.setattr(readers, "csv_options_sql", lambda o: real({**o, "comment": "#"}))
    data = _folder(tmp_path, {"tags.csv": b"id,tag\n1,a\n#2,b\n3,c\n"})
    interp = interpret(data)
    (lost,) = _issues(interp, "records_lost")
    assert lost.blocking and lost.severity == "error"
    assert "tags.csv: 3 records in the file, but 2 rows read + 0 rejected lines = 2" in lost.message
    result = run(data, tmp_path / "ws")
    assert not result.report.accepted
    integrity = {r.table: r for r in result.report.load_integrity}
    assert not integrity["tags"].passed
    assert "3 records in the file" in integrity["tags"].message
    counts = {r.table: r for r in result.report.row_counts}
    assert not counts["tags"].passed
    assert "records_lost: tags.csv has 3 records, but 2 rows were loaded + 0 lines rejected = 2" in counts["tags"].message


def test_the_build_counts_records_against_the_warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A record lost between the read and staging fails row-count reconciliation by name."""
    from dia_assets.agents.schema_creator import sqlgen

    data = _folder(tmp_path, {"items.csv": b"id,name\n1,a\n2,b\n3,c\n4,d\n"})
    real = sqlgen.staging_ctas_sql
    monkeypatch.setattr(sqlgen, "staging_ctas_sql", lambda t, at: real(t, at) + " WHERE __dia_rowid <> 2")
    result = run(data, tmp_path / "ws")
    counts = {r.table: r for r in result.report.row_counts}
    assert not counts["items"].passed and not result.report.accepted
    assert "records_lost: items.csv has 4 records, but 3 rows were loaded + 0 lines rejected = 3" in counts["items"].message


def test_a_record_over_the_limit_is_refused_by_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIA_CSV_MAX_RECORD", "1000")
    data = _folder(tmp_path, {"blob.csv": b"id,blob\n1,a\n2," + b"x" * 5000 + b"\n3,c\n",
                              "ok.csv": b"id,name\n1,a\n"})
    interp = interpret(data)
    (issue,) = _issues(interp, "record_too_long")
    assert issue.blocking and "blob.csv: the record starting on line 3 is 5,002 bytes long" in issue.message
    assert "DIA_CSV_MAX_RECORD" in issue.message
    assert not interp.source("blob").parse.ok and interp.source("ok").parse.ok
    result = run(data, tmp_path / "ws")
    assert not result.report.accepted
    assert [u.name for u in result.manifest.unreadable_sources] == ["blob"]


def test_the_read_buffer_holds_twice_the_longest_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dia_assets.platform.files import readers

    monkeypatch.setenv("DIA_CSV_BUFFER", "64KB")
    tries: list[dict] = []
    monkeypatch.setattr(readers, "csv_options_sql", lambda o, f=readers.csv_options_sql: tries.append(o) or f(o))
    record = b"2," + b"y" * 300_000
    data = _folder(tmp_path, {"w.csv": b"id,blob\n1,a\n" + record + b"\n"})
    interp = interpret(data)
    assert interp.source("w").row_count == 2
    assert [t["buffer_size"] for t in tries] == [2 * len(record) + 2]
