"""Bad files get a clear per-source message naming the file, and the run goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from dia_assets.agents.interpreter import interpret

GOOD = "id,name\n1,a\n2,b\n"


def _run(tmp_path: Path, files: dict[str, bytes | str]):
    for name, content in files.items():
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return interpret(tmp_path)


def _issues(interp, source):
    return {q.kind: q for q in interp.quality_issues if q.source == source}


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("empty.csv", b"", "empty file (0 bytes)"),
        ("binary.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary content"),
        ("broken.xlsx", b"this is not a zip archive", "cannot read Excel workbook"),
        ("blank.csv", b"\n\n  \n", "only blank lines"),
        ("empty.jsonl", b"", "empty file"),
    ],
)
def test_unreadable_file_is_reported_and_others_still_load(tmp_path, name, content, fragment):
    interp = _run(tmp_path, {name: content, "good.csv": GOOD})
    bad = interp.source(Path(name).stem)
    assert not bad.parse.ok and fragment in bad.parse.errors[0]
    issue = _issues(interp, bad.name)["unreadable_file"]
    assert issue.severity == "error" and name in issue.message
    assert interp.source("good").row_count == 2


def test_header_only_file(tmp_path):
    interp = _run(tmp_path, {"h.csv": "customer_id,name\n"})
    src = interp.source("h")
    assert src.row_count == 0 and [c.name for c in src.columns] == ["customer_id", "name"]
    assert "header_only" in _issues(interp, "h")
    assert src.primary_key.columns == ["customer_id"] and src.primary_key.confidence < 0.8


def test_ragged_rows_are_counted_not_lost(tmp_path):
    interp = _run(tmp_path, {"r.csv": "a,b,c\n1,2,3\n4,5\n6,7,8,9\n10,11,12\n"})
    src = interp.source("r")
    assert src.row_count == 2 and src.parse.bad_rows == 2
    issue = _issues(interp, "r")["ragged_rows"]
    assert issue.count == 2 and "line 3" in issue.examples[0] and "r.csv" in issue.message


def test_duplicate_column_names(tmp_path):
    interp = _run(tmp_path, {"d.csv": "id,amount,amount\n1,2,3\n"})
    src = interp.source("d")
    assert [c.name for c in src.columns] == ["id", "amount", "amount_2"]
    assert _issues(interp, "d")["duplicate_column_names"].examples == ["amount"]


@pytest.mark.parametrize("first_buffer", [None, "1MB"])
def test_huge_field(tmp_path, monkeypatch, first_buffer):
    """A field longer than DIA_CSV_BUFFER (1 MB here) is read in one go: the record count sized
    the buffer to twice the longest record before the read."""
    from dia_assets.platform.files import readers

    if first_buffer:
        monkeypatch.setenv("DIA_CSV_BUFFER", first_buffer)
    tries = []
    monkeypatch.setattr(readers, "csv_options_sql", lambda o, f=readers.csv_options_sql: tries.append(o) or f(o))
    big = "x" * 3_000_000
    interp = _run(tmp_path, {"big.csv": f"id,blob\n1,{big}\n2,small\n"})
    assert len(tries) == 1 and "max_line_size" not in tries[0]
    assert tries[0]["buffer_size"] == (2 * (len(big) + 2) + 2 if first_buffer else readers.FIRST_BUFFER)
    src = interp.source("big")
    assert src.row_count == 2 and src.column("blob").max_length == 3_000_000
    assert _issues(interp, "big")["huge_field"].count == 1
    assert all(len(e) <= 201 for e in src.column("blob").examples)


def test_non_utf8_csv_is_decoded(tmp_path):
    content = "name;city\nJosé;Zürich\nZoë;Köln\n".encode("cp1252")
    interp = _run(tmp_path, {"people.csv": content})
    src = interp.source("people")
    assert src.parse.encoding == "cp1252" and src.parse.delimiter == ";"
    assert "José" in src.column("name").examples


def test_malformed_json_lines_are_counted(tmp_path):
    interp = _run(tmp_path, {"e.jsonl": '{"id": 1}\n{"id": 2\n{"id": 3}\n'})
    src = interp.source("e")
    assert src.row_count == 2 and src.parse.bad_rows == 1
    assert _issues(interp, "e")["malformed_records"].examples[0].startswith("line 2")


def test_unsupported_file_is_named_not_skipped(tmp_path):
    interp = _run(tmp_path, {"notes.docx": b"PK..", "good.csv": GOOD})
    assert _issues(interp, "notes")["unsupported_format"].message.startswith("notes.docx")


def test_missing_folder_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        interpret(tmp_path / "nope")


def test_conflicting_duplicate_keys_keep_the_key_and_are_reported(tmp_path):
    rows = "\n".join(f"{i},Customer number {i}" for i in range(1, 101))
    interp = _run(tmp_path, {"c.csv": f"customer_id,name\n{rows}\n7,other name\n"})
    src = interp.source("c")
    assert src.primary_key.columns == ["customer_id"] and src.primary_key.confidence < 0.8
    issue = _issues(interp, "c")["duplicate_keys"]
    assert issue.count == 1 and issue.examples == ["7"]


def test_a_line_with_several_errors_counts_once(tmp_path):
    interp = _run(tmp_path, {"r.csv": "a,b,c,d\n1,2,3,4\n5\n6,7,8,9\n"})
    assert interp.source("r").parse.bad_rows == 1
