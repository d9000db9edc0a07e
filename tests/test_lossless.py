"""Records are never lost without a word: encodings, big numbers, malformed and wide files,
and file names. Each case either reads every record right or says what it could not."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.interpreter import interpret
from tests.schema_fixtures import build_ws

pytestmark = pytest.mark.heavy  # collected first (tests/conftest.py)
PEOPLE = [{"id": 1, "name": "José"}, {"id": 2, "name": "Zoë"}, {"id": 3, "name": "Ålborg"}]


def _write(folder: Path, files: dict[str, bytes | str]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    return folder


def _issues(interp, source: str) -> dict:
    return {q.kind: q for q in interp.quality_issues if q.source == source}


def _jsonl(rows: list[dict]) -> str:
    import json

    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


@pytest.mark.parametrize(
    ("encoding", "fmt"),
    [("cp1252", "jsonl"), ("latin-1", "jsonl"), ("utf-16", "jsonl"), ("utf-8-sig", "jsonl"),
     ("cp1252", "json"), ("utf-16", "json")],
)
def test_json_in_any_encoding_keeps_every_record(tmp_path, encoding, fmt):
    import json

    text = _jsonl(PEOPLE) if fmt == "jsonl" else json.dumps(PEOPLE, ensure_ascii=False)
    interp = interpret(_write(tmp_path, {f"people.{fmt}": text.encode(encoding)}))
    src = interp.source("people")
    assert src.parse.ok and src.row_count == 3 and src.duplicate_rows == 0 and src.parse.bad_rows == 0
    assert src.parse.encoding == encoding or (encoding == "latin-1" and src.parse.encoding == "cp1252")
    assert sorted(src.column("name").examples) == sorted(p["name"] for p in PEOPLE)


def test_cp1252_jsonl_builds_every_row(tmp_path):
    data = _write(tmp_path / "data", {"people.jsonl": _jsonl(PEOPLE).encode("cp1252")})
    result = build_ws(tmp_path, interpret(data))
    rows = next(r for r in result.report.row_counts if r.table == "people")
    assert (rows.source_rows, rows.refined, rows.duplicates_removed) == (3, 3, 0) and result.report.accepted


def test_bad_json_line_in_cp1252_goes_to_rejects_with_its_text(tmp_path):
    text = _jsonl(PEOPLE[:2]) + "{broken Zoë\n" + _jsonl(PEOPLE[2:])
    data = _write(tmp_path / "data", {"people.jsonl": text.encode("cp1252")})
    interp = interpret(data)
    assert interp.source("people").row_count == 3 and interp.source("people").parse.bad_rows == 1
    result = build_ws(tmp_path, interp)
    con = duckdb.connect(result.load.warehouse, read_only=True)
    try:
        assert con.execute("SELECT _source_row, _raw_line FROM rejects.people").fetchall() == [(3, "{broken Zoë")]
        assert con.execute("SELECT count(*) FROM people").fetchone()[0] == 3
    finally:
        con.close()


def test_all_null_json_records_are_records_not_parse_errors(tmp_path):
    text = '{"a": 1}\n{bad\n{"a": null}\n{}\n{"a": 2}\n'
    src = interpret(_write(tmp_path, {"n.jsonl": text})).source("n")
    assert src.row_count == 4 and src.parse.bad_rows == 1


BIG = [123456789012345678901234, 123456789012345678901235, 2**64 + 1, 2**64 + 2]


def test_json_integers_beyond_64_bits_stay_exact(tmp_path):
    data = _write(tmp_path / "data", {"ids.jsonl": "".join(f'{{"id": {i}, "v": {n}}}\n' for n, i in enumerate(BIG))})
    interp = interpret(data)
    src = interp.source("ids")
    assert src.column("id").inferred_type in ("HUGEINT", "DECIMAL(38,0)", "VARCHAR")
    assert src.duplicate_rows == 0 and src.column("id").unique
    result = build_ws(tmp_path, interp)
    con = duckdb.connect(result.load.warehouse, read_only=True)
    try:
        got = [int(r[0]) for r in con.execute("SELECT id FROM ids ORDER BY id").fetchall()]
        assert got == sorted(BIG) and "DOUBLE" not in dict(con.execute("DESCRIBE ids").fetchall()[i][:2]
                                                            for i in range(2))["id"]
    finally:
        con.close()


def test_big_integer_text_in_csv_is_never_double(tmp_path):
    rows = "".join(f"{i},{'9' * 39}{n}\n" for n, i in enumerate(BIG))
    src = interpret(_write(tmp_path, {"ids.csv": "id,wide\n" + rows})).source("ids")
    assert src.column("id").inferred_type in ("HUGEINT", "DECIMAL(38,0)")
    assert src.column("wide").inferred_type == "VARCHAR"  # 40 digits: beyond HUGEINT, kept as text
    assert src.column("id").unparseable_count == 0 and src.column("wide").unparseable_count == 0


@pytest.mark.parametrize(("fmt", "body"), [
    ("jsonl", '{"id": 1, "v": 1.5}\n{"id": 2, "v": NaN}\n{"id": 3, "v": 1e400}\n{"id": 4, "v": 2.5}\n'),
    ("csv", "id,v\n" + "".join(f"{i},{i}.5\n" for i in range(40)) + "41,Infinity\n42,1e400\n"),
])
def test_non_finite_numbers_are_flagged(tmp_path, fmt, body):
    interp = interpret(_write(tmp_path, {f"m.{fmt}": body}))
    issue = _issues(interp, "m")["non_finite_numbers"]
    assert issue.column == "v" and issue.count == 2 and f"m.{fmt}" in issue.message


def test_colliding_file_names_get_distinct_sources_and_build(tmp_path):
    data = _write(tmp_path / "data", {"a b.csv": "id,x\n1,p\n2,q\n", "a_b.csv": "id,y\n1,r\n2,s\n3,t\n"})
    interp = interpret(data)
    assert {s.path: s.name for s in interp.sources} == {"a b.csv": "a_b", "a_b.csv": "a_b_2"}
    issue = _issues(interp, "a_b_2")["source_renamed"]
    assert "a_b.csv" in issue.message and "'a_b_2'" in issue.message
    again = interpret(data)  # stable: the same folder gives the same names
    assert [s.name for s in again.sources] == [s.name for s in interp.sources]
    result = build_ws(tmp_path, interp)
    counts = {r.table: r.refined for r in result.report.row_counts}
    assert counts == {"a_b": 2, "a_b_2": 3} and result.report.accepted


def test_symlink_outside_the_data_folder_is_refused(tmp_path):
    secret = _write(tmp_path / "elsewhere", {"secret.csv": "user,password\nroot,hunter2\n"}) / "secret.csv"
    data = _write(tmp_path / "data", {"good.csv": "id,name\n1,a\n"})
    (data / "leak.csv").symlink_to(secret)
    (data / "alias.csv").symlink_to(data / "good.csv")  # inside the folder: read like the file
    interp = interpret(data)
    assert {s.name for s in interp.sources} == {"good", "alias"}
    issue = _issues(interp, "leak")["refused_file"]
    assert issue.severity == "error" and "leak.csv" in issue.message and "outside the data folder" in issue.message
    assert not any("hunter2" in str(s.model_dump()) for s in interp.sources)


@pytest.mark.parametrize(("body", "rows", "bad"), [
    ('id,name\n1,"ok"\n2,"unclosed\n3,c\n4,d\n', [("1", "ok"), ("3", "c"), ("4", "d")], [(3, '2,"unclosed')]),
    ('id,name\n1,"ok"\n2,"un\n3,c\n4,"d\n5,e\n6,"multi\nline"\n',
     [("1", "ok"), ("3", "c"), ("5", "e"), ("6", "multi\nline")], [(3, '2,"un'), (5, '4,"d')]),
])
def test_unclosed_quote_loads_readable_rows_and_rejects_the_rest(tmp_path, body, rows, bad):
    data = _write(tmp_path / "data", {"q.csv": body, "good.csv": "id,name\n1,a\n"})
    interp = interpret(data)
    src = interp.source("q")
    assert src.parse.ok and src.row_count == len(rows) and src.parse.bad_rows == len(bad)
    issue = _issues(interp, "q")["malformed_csv"]
    assert "q.csv" in issue.message and f"line {bad[0][0]}" in issue.examples[0]
    result = build_ws(tmp_path, interp)
    con = duckdb.connect(result.load.warehouse, read_only=True)
    try:
        assert con.execute("SELECT CAST(id AS VARCHAR), name FROM q ORDER BY id").fetchall() == rows
        assert con.execute("SELECT _source_row, _raw_line FROM rejects.q ORDER BY 1").fetchall() == bad
    finally:
        con.close()
    counts = next(r for r in result.report.row_counts if r.table == "q")
    assert counts.passed and counts.unparsed_lines == len(bad)  # acceptance: the reject-fraction policy


def test_unclosed_quote_deep_in_a_big_file_swallows_nothing(tmp_path):
    rows = "".join(f"{i},name{i}\n" for i in range(30_000))
    body = "id,name\n" + rows + '30000,"unclosed\n' + rows.replace(",name", ",x")
    src = interpret(_write(tmp_path, {"q.csv": body})).source("q")
    assert src.row_count == 60_000 and src.parse.bad_rows == 1


def test_ragged_rows_go_to_rejects_through_the_warehouse(tmp_path):
    data = _write(tmp_path / "data", {"r.csv": "a,b,c\n1,2,3\n4,5\n6,7,8,9\n10,11,12\n"})
    result = build_ws(tmp_path, interpret(data))
    counts = next(r for r in result.report.row_counts if r.table == "r")
    assert (counts.source_rows, counts.refined, counts.unparsed_lines) == (4, 2, 2) and counts.passed
    con = duckdb.connect(result.load.warehouse, read_only=True)
    try:
        assert con.execute("SELECT _source_row, _raw_line FROM rejects.r ORDER BY 1").fetchall() == [
            (3, "4,5"), (4, "6,7,8,9")]
    finally:
        con.close()


def test_a_file_that_cannot_be_read_is_never_accepted(tmp_path):
    data = _write(tmp_path / "data", {"good.csv": "id,name\n1,a\n2,b\n", "empty.csv": "",
                                      "broken.xlsx": b"this is not a zip archive\nsecond line\n"})
    result = build_ws(tmp_path, interpret(data))
    counts = {r.table: r for r in result.report.row_counts}
    assert counts["empty"].passed  # nothing in it, nothing lost
    assert not counts["broken"].passed and counts["broken"].source_rows == 2
    assert "broken.xlsx could not be loaded" in counts["broken"].message
    assert not result.report.axes["row_count_reconciliation"].passed and not result.report.accepted
    excluded = build_ws(tmp_path / "again", interpret(data), overrides="tables:\n  broken:\n    exclude: not ours\n")
    assert excluded.report.accepted


def _wide_csv(columns: int, rows: int) -> str:
    header = ",".join(f"c{i}" for i in range(columns))
    body = "".join(",".join(str((r * 7 + i) % 50) if i % 2 else f"v{r % 9}_{i % 3}" for i in range(columns)) + "\n"
                   for r in range(rows))
    return header + "\n" + body


def test_a_1000_column_file_is_profiled_next_to_a_good_file(tmp_path):
    interp = interpret(_write(tmp_path, {"wide.csv": _wide_csv(1_000, 200), "good.csv": "id,name\n1,a\n2,b\n"}))
    wide = interp.source("wide")
    assert wide.parse.ok and wide.row_count == 200 and len(wide.columns) == 1_000
    assert wide.column("c1").inferred_type == "INTEGER" and wide.column("c0").top_values
    assert wide.column("c999").examples and wide.column("c998").patterns
    assert interp.source("good").row_count == 2 and interp.source("good").primary_key.columns == ["id"]


def test_wide_and_narrow_profiles_agree(tmp_path, monkeypatch):
    """The batched pass for wide files answers what the per-column queries answer."""
    from dia_assets.agents.interpreter import profile_wide

    _write(tmp_path, {"t.csv": _wide_csv(12, 40) + "1,2,,4,5,6,7,8,9,10,11,12\n"})
    narrow = interpret(tmp_path).source("t")
    monkeypatch.setattr(profile_wide, "WIDE_COLUMNS", 1)
    wide = interpret(tmp_path).source("t")
    for a, b in zip(narrow.columns, wide.columns, strict=True):
        assert (a.top_values, a.patterns, len(a.examples)) == (b.top_values, b.patterns, len(b.examples))


def test_unpivoted_passes_of_wide_files_agree_with_per_column_ones(tmp_path, monkeypatch):
    """Passes B and C of wide files (columns unpivoted, grouped by column) give every figure
    the per-column queries give: counts, types, formats, keys, outliers, issues."""
    from dia_assets.agents.interpreter import profile_wide

    rows = [f"{i},{i % 7},{'' if i % 5 == 0 else ' x '},{'NA' if i % 9 == 0 else i * 1.5},"
            f"{'abc' if i == 3 else f'2024-01-{1 + i % 28:02d}'},{'-' if i % 4 == 0 else 'v' + str(i % 3)},"
            f"{10_000 if i == 7 else i % 10},{'inf' if i == 11 else i},{'' if i % 2 else ''}"
            for i in range(60)]
    _write(tmp_path, {"t.csv": "id,grp,pad,amount,day,cat,spike,big,empty\n" + "\n".join(rows) + "\n"})
    narrow = interpret(tmp_path)
    monkeypatch.setattr(profile_wide, "WIDE_COLUMNS", 1)
    wide = interpret(tmp_path)
    for a, b in zip(narrow.sources[0].columns, wide.sources[0].columns, strict=True):
        assert a.model_dump() == b.model_dump(), a.name
    assert narrow.sources[0].primary_key == wide.sources[0].primary_key
    issues = [sorted((i.column or "", i.kind, i.count) for i in x.quality_issues) for x in (narrow, wide)]
    assert issues[0] == issues[1] and any(kind == "outliers" for _, kind, _ in issues[0]), issues[0]


def test_a_file_beyond_the_column_limit_is_refused_by_name(tmp_path, monkeypatch):
    monkeypatch.setenv("DIA_MAX_COLUMNS", "50")
    interp = interpret(_write(tmp_path, {"wide.csv": _wide_csv(60, 5), "good.csv": "id,name\n1,a\n2,b\n"}))
    issue = _issues(interp, "wide")["unreadable_file"]
    assert "wide.csv" in issue.message and "60 columns" in issue.message and "DIA_MAX_COLUMNS" in issue.message
    assert not interp.source("wide").parse.ok and interp.source("good").row_count == 2


def test_a_file_that_fails_while_profiling_never_takes_the_others_down(tmp_path, monkeypatch):
    from dia_assets.agents.interpreter import interpreter

    real = interpreter.profile_table

    def explode(con, table):
        if con.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 3:
            raise duckdb.OutOfMemoryException("Out of Memory Error: failed to allocate data")
        return real(con, table)

    monkeypatch.setattr(interpreter, "profile_table", explode)
    interp = interpret(_write(tmp_path, {"a.csv": "id\n1\n2\n3\n", "b.csv": "id,name\n1,a\n2,b\n"}))
    issue = _issues(interp, "a")["unreadable_file"]
    assert issue.message.startswith("a.csv: ") and "out of memory within DIA_MEMORY_LIMIT=2GB" in issue.message
    assert not interp.source("a").parse.ok and interp.source("b").row_count == 2


def test_memory_limit_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DIA_MEMORY_LIMIT", "lots")
    with pytest.raises(ValueError, match="DIA_MEMORY_LIMIT=lots: expected a memory size"):
        interpret(_write(tmp_path, {"good.csv": "id\n1\n"}))


def test_a_10000_column_file_is_profiled_in_chunks_next_to_a_good_file(tmp_path):
    interp = interpret(_write(tmp_path, {"huge.csv": _wide_csv(10_000, 3), "good.csv": "id,name\n1,a\n2,b\n"}))
    huge = interp.source("huge")
    assert huge.parse.ok and huge.row_count == 3 and len(huge.columns) == 10_000
    assert huge.column("c9999").inferred_type == "INTEGER" and huge.column("c9998").examples
    assert not [i for i in interp.quality_issues if i.kind == "unreadable_file"]
    assert interp.source("good").row_count == 2 and interp.source("good").primary_key.columns == ["id"]


def test_a_nested_array_named_like_another_file_gets_its_own_table(tmp_path):
    data = _write(tmp_path / "data", {
        "Orders Items.csv": "line_id,qty\n1,5\n2,6\n",  # sorts first: takes the name orders_items
        "orders.jsonl": '{"order_id": 1, "items": [{"sku": "a"}, {"sku": "b"}]}\n{"order_id": 2, "items": []}\n',
    })
    interp = interpret(data)
    names = {(s.path, s.parse.json_path): s.name for s in interp.sources}
    assert names == {("Orders Items.csv", None): "orders_items", ("orders.jsonl", None): "orders",
                     ("orders.jsonl", "$.items[*]"): "orders_items_2"}
    assert "source_renamed" in _issues(interp, "orders_items_2")
    result = build_ws(tmp_path, interp)
    assert {r.table: r.refined for r in result.report.row_counts} == {
        "orders_items": 2, "orders": 2, "orders_items_2": 2}


def test_raw_file_partitions_are_distinct_per_file(tmp_path):
    from dia_assets.dagster.interpretation import folder_partitions
    from dia_assets.dagster.schema import raw_partition

    data = _write(tmp_path, {"a b.csv": "id\n1\n", "a_b.csv": "id\n2\n", "sub/a_b.csv": "id\n3\n"})
    keys = list(folder_partitions(data))
    assert len(set(keys)) == 3 and raw_partition("a_b.csv") == "a_b_csv"
    assert {raw_partition(p) for p in ("a b.csv", "a_b.csv", "sub/a_b.csv")} == set(keys)


def test_jsonl_lines_that_are_not_objects_do_not_reshape_the_file(tmp_path):
    text = '{"id": 1, "kind": "a"}\n[1, 2]\n"just a string"\n{"id": 2, "kind": "b"}\n{broken\n{}\n'
    data = _write(tmp_path / "data", {"e.jsonl": text})
    interp = interpret(data)
    src = interp.source("e")
    assert [c.name for c in src.columns] == ["id", "kind"] and src.row_count == 3 and src.parse.bad_rows == 3
    result = build_ws(tmp_path, interp)
    con = duckdb.connect(result.load.warehouse, read_only=True)
    try:
        assert con.execute("SELECT _source_row, _raw_line FROM rejects.e ORDER BY 1").fetchall() == [
            (2, "[1, 2]"), (3, '"just a string"'), (5, "{broken")]
    finally:
        con.close()


def test_big_integers_inside_nested_arrays_stay_exact(tmp_path):
    text = f'{{"id": 1, "meta": {{"ref": {2**70}}}, "items": [{{"big": {2**70}}}, {{"big": {2**70 + 1}}}]}}\n'
    interp = interpret(_write(tmp_path, {"n.jsonl": text}))
    items = interp.source("n_items")
    assert items.column("big").inferred_type in ("HUGEINT", "DECIMAL(38,0)") and items.column("big").unique
    assert interp.source("n").column("meta_ref").examples == [str(2**70)]
