"""Load: staging keeps every record with provenance, refined is typed and deduplicated,
rejects keep raw values with a reason, nothing is dropped, loads are atomic."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dia_assets.agents.schema_creator.load import SourceMissingError, load_duckdb
from dia_assets.contracts.interpretation import ValueFormat
from dia_assets.pipeline import run
from tests.schema_fixtures import EXAMPLES, build_ws, csv_source, interpretation, manifest_for


@pytest.fixture(scope="module")
def example_build(tmp_path_factory, example_interpretation):
    ws = tmp_path_factory.mktemp("example") / "ws"
    return run(EXAMPLES / "data", ws, interpretation=example_interpretation,
               overrides_seed=EXAMPLES / "data" / "overrides.yaml")


def test_example_builds_accepted_with_every_artifact(example_build, example_truth):
    report = example_build.report
    assert report.accepted, [a.summary for a in report.axes.values()]
    for key in ("manifest", "ddl", "load", "er", "lineage", "report", "report_md"):
        assert example_build.paths[key].exists(), key
    rows = {r.table: r for r in report.row_counts}
    for name, spec in example_truth["sources"].items():
        assert rows[name].source_rows == spec["row_count"]
    assert rows["staff"].duplicates_removed == 5 and rows["staff"].refined == 400
    orphans = {(k.table, k.columns[0]): k.orphan_rows for k in report.key_validity if k.kind == "foreign_key"}
    assert orphans[("payroll", "badge")] == 6 and orphans[("shifts_assignments", "badge")] == 8
    md = example_build.paths["report_md"].read_text()
    assert "accepted: true" in md and "5 exact duplicate rows removed" in md
    assert example_build.paths["er"].read_text().startswith("erDiagram")
    assert json.loads(example_build.paths["lineage"].read_text())["payroll"]["gross_pay"][0]["column"] == "gross_pay"


def test_example_refined_values(example_build):
    con = duckdb.connect(str(example_build.load.warehouse), read_only=True)
    try:
        roles = dict(con.execute("SELECT role, count(*) FROM staff GROUP BY 1").fetchall())
        assert len(roles) == 9 and roles["Registered Nurse"] == 156
        assert dict(con.execute("SELECT status, count(*) FROM shifts GROUP BY 1").fetchall()) == {
            "completed": 2313, "cancelled": 187}
        # JSON "" stays an empty string, JSON null stays NULL (no evidence to merge them).
        assert con.execute("SELECT count(*) FILTER (notes = ''), count(*) FILTER (notes IS NULL) FROM shifts"
                           ).fetchone() == (76, 2322)
        assert con.execute("SELECT postal_code FROM staff WHERE badge = 'B04961'").fetchone()[0] == "02142"
        assert str(con.execute("SELECT typeof(gross_pay) FROM payroll LIMIT 1").fetchone()[0]) == "DECIMAL(18,2)"
        assert con.execute("SELECT count(*) FROM staging.staff").fetchone()[0] == 405
        prov = con.execute("SELECT _source_file, _source_row, _content_hash FROM staging.staff "
                           "ORDER BY _source_row LIMIT 1").fetchone()
        assert prov[0] == "staff.csv" and prov[1] == 1 and isinstance(prov[2], int)
        rejects = con.execute("SELECT badge, hourly_rate, _reason, _row_kept FROM rejects.staff ORDER BY badge").fetchall()
        assert rejects == [("B02244", "see contract", "hourly_rate: not a DECIMAL(18,2)", True),
                           ("B05150", "tbd", "hourly_rate: not a DECIMAL(18,2)", True)]
        pks = {r[0] for r in con.execute(
            "SELECT table_name FROM duckdb_constraints() WHERE constraint_type = 'PRIMARY KEY'").fetchall()}
        assert {"staff", "shifts", "payroll", "hospital_wards"} <= pks
    finally:
        con.close()


def _write_csv(path: Path, header: list[str], rows: list[list[str | None]]) -> None:
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for row in rows:
            fh.write(",".join("" if v is None else ('""' if v == "" else v) for v in row) + "\r\n")


def test_free_text_in_a_date_column_goes_to_rejects(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    _write_csv(data / "visits.csv", ["id", "visit_date", "note"],
               [["1", "2024-01-05", "a"], ["2", "last tuesday", ""], ["3", "2024-02-30", None],
                ["4", "2024-03-01", "b"], ["5", None, "c"]] + [[str(i), "2024-04-01", "x"] for i in range(6, 60)])
    src = csv_source("visits", data / "visits.csv", {"id": "INTEGER", "visit_date": "DATE", "note": "VARCHAR"},
                     rows=59, pk=["id"], formats={"visit_date": ValueFormat(date_formats=["%Y-%m-%d"])})
    result = build_ws(tmp_path, interpretation(data, src))
    assert result.report.accepted
    con = duckdb.connect(result.load.warehouse, read_only=True)
    try:
        rejects = con.execute("SELECT id, visit_date, _reason, _source_row FROM rejects.visits ORDER BY id").fetchall()
        assert rejects == [("2", "last tuesday", "visit_date: not a DATE", 2),
                           ("3", "2024-02-30", "visit_date: not a DATE", 3)]
        assert con.execute("SELECT count(*) FROM visits").fetchone()[0] == 57
        # Unquoted empty = NULL, "" = empty string (RFC 4180), kept apart in text columns.
        assert con.execute("SELECT count(*) FROM visits WHERE visit_date IS NULL").fetchone()[0] == 1
        assert con.execute("SELECT note FROM staging.visits WHERE id = '2'").fetchone()[0] == ""
    finally:
        con.close()
    reasons = next(r for r in result.report.load_integrity if r.table == "visits").reasons
    assert reasons == {"visit_date: not a DATE": 2}


def test_ragged_lines_are_rejected_with_the_raw_line(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "t.csv").write_text("a,b\n1,x\n2\n3,y\n4,z,extra\n")
    src = csv_source("t", data / "t.csv", {"a": "INTEGER", "b": "VARCHAR"}, rows=2, bad_rows=2)
    result = build_ws(tmp_path, interpretation(data, src))
    rows = next(r for r in result.report.row_counts if r.table == "t")
    assert (rows.source_rows, rows.staged, rows.unparsed_lines, rows.refined) == (4, 2, 2, 2)
    con = duckdb.connect(result.load.warehouse, read_only=True)
    try:
        got = con.execute("SELECT _source_row, _raw_line, _reason LIKE 'unparseable line:%' FROM rejects.t "
                          "ORDER BY 1").fetchall()
        assert got == [(3, "2", True), (5, "4,z,extra", True)]
    finally:
        con.close()


def test_missing_source_file_names_it(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    _write_csv(data / "gone.csv", ["a"], [["1"]])
    interp = interpretation(data, csv_source("gone", data / "gone.csv", {"a": "INTEGER"}, rows=1))
    (data / "gone.csv").unlink()
    with pytest.raises(SourceMissingError, match="gone.csv"):
        load_duckdb(manifest_for(interp), data, tmp_path / "w.duckdb")


class Boom(RuntimeError):
    pass


@pytest.mark.parametrize("step", ["staging:b", "refined:a", "refined:b", "swap"])
def test_failed_load_leaves_previous_warehouse(tmp_path, step):
    data = tmp_path / "data"
    data.mkdir()
    _write_csv(data / "a.csv", ["id"], [["1"], ["2"]])
    _write_csv(data / "b.csv", ["id"], [["7"]])
    interp = interpretation(data, csv_source("a", data / "a.csv", {"id": "INTEGER"}, rows=2),
                            csv_source("b", data / "b.csv", {"id": "INTEGER"}, rows=1))
    target = tmp_path / "wh" / "warehouse.duckdb"
    load_duckdb(manifest_for(interp), data, target)
    before = target.read_bytes()
    _write_csv(data / "a.csv", ["id"], [["1"], ["2"], ["3"]])

    def hook(name: str) -> None:
        if name == step:
            raise Boom(name)

    with pytest.raises(Boom):
        load_duckdb(manifest_for(interp), data, target, hook=hook)
    assert target.read_bytes() == before
    assert sorted(p.name for p in target.parent.iterdir()) == ["warehouse.duckdb"]
    con = duckdb.connect(str(target), read_only=True)
    assert con.execute("SELECT count(*) FROM a").fetchone()[0] == 2
    con.close()
    load_duckdb(manifest_for(interp), data, target)  # and a clean run then swaps in the new data
    con = duckdb.connect(str(target), read_only=True)
    assert con.execute("SELECT count(*) FROM a").fetchone()[0] == 3
    con.close()


# ---------------------------------------------------------------- property: rows conserved

WORD = st.text(alphabet="abcdefxyz0123456789 -./", max_size=8)
CELL = st.one_of(st.none(), st.just(""), st.just(" "), st.just("NULL"), WORD,
                 st.integers(-10**6, 10**6).map(str), st.decimals(-1000, 1000, places=2).map(str),
                 st.dates().map(str))
ROW = st.tuples(st.integers(1, 30).map(str), CELL, CELL, CELL)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(ROW, min_size=0, max_size=40), dup_idx=st.lists(st.integers(0, 39), max_size=5),
       ragged=st.lists(st.integers(0, 40), max_size=3), dedup=st.booleans())
def test_rows_are_conserved_for_messy_input(tmp_path_factory, rows, dup_idx, ragged, dedup):
    tmp = tmp_path_factory.mktemp("prop")
    data = tmp / "data"
    data.mkdir()
    body = [list(r) for r in rows]
    body += [list(rows[i]) for i in dup_idx if i < len(rows)]
    lines = ["id,amount,day,label"]
    for r in body:
        lines.append(",".join("" if v is None else ('""' if v == "" else v) for v in r))
    for pos in ragged:
        lines.insert(min(pos, len(lines) - 1) + 1, "99")
    (data / "m.csv").write_text("\n".join(lines) + "\n")
    staged_expected = len(body)
    src = csv_source("m", data / "m.csv", {"id": "INTEGER", "amount": "DECIMAL(18,2)", "day": "DATE",
                                           "label": "VARCHAR"},
                     rows=staged_expected, bad_rows=len(ragged), pk=["id"],
                     duplicates=1 if dedup else 0)
    result = build_ws(tmp, interpretation(data, src))
    r = result.report.row_counts[0]
    assert r.staged == staged_expected
    assert r.source_rows == staged_expected + len(ragged) == r.interpreted_rows
    assert r.staged == r.refined + r.rejected + r.duplicates_removed
    assert r.passed
    con = duckdb.connect(result.load.warehouse, read_only=True)
    try:
        rejects = con.execute("SELECT count(*) FROM rejects.m").fetchone()[0]
        refined = con.execute("SELECT count(*) FROM m").fetchone()[0]
    finally:
        con.close()
    assert refined + rejects + r.duplicates_removed == r.source_rows
    if dedup:
        assert r.duplicates_removed == len(body) - len({tuple(x) for x in body})
    shutil.rmtree(tmp)


def test_malformed_json_lines_are_rejected_and_nested_arrays_load(tmp_path):
    from dia_assets.agents.interpreter import interpret

    data = tmp_path / "data"
    data.mkdir()
    (data / "events.jsonl").write_text(
        '{"event_id": 1, "kind": "a", "tags": [{"t": "x"}, {"t": "y"}]}\n'
        '{"event_id": 2, "kind": "b", "tags": []}\n'
        "{not json\n"
        '{"event_id": 3, "kind": "a", "tags": [{"t": "z"}]}\n'
    )
    interp = interpret(data)
    result = build_ws(tmp_path, interp)
    rows = {r.table: r for r in result.report.row_counts}
    assert rows["events"].unparsed_lines == 1 and rows["events"].refined == 3
    assert rows["events_tags"].refined == 3
    con = duckdb.connect(result.load.warehouse, read_only=True)
    try:
        assert con.execute("SELECT _source_row, _raw_line, _reason FROM rejects.events").fetchall() == [
            (3, "{not json", "unparseable line: not a JSON object")]
        assert con.execute("SELECT DISTINCT _source_file FROM staging.events_tags").fetchall() == [
            ("events.jsonl$.tags[*]",)]
    finally:
        con.close()


def test_validation_is_computed_once_per_build_and_shared(tmp_path, monkeypatch):
    """The checks and `validation_report` read the build's report while it describes the
    installed file; a changed file is validated again."""
    from dia_assets.agents.schema_creator import build as sc

    data = tmp_path / "data"
    data.mkdir()
    _write_csv(data / "t.csv", ["id", "name"], [[str(i), f"n{i}"] for i in range(1, 30)])
    src = csv_source("t", data / "t.csv", {"id": "INTEGER", "name": "VARCHAR"}, rows=29, pk=["id"])
    result = build_ws(tmp_path, interpretation(data, src))
    ws, warehouse = result.paths["report"].parent.parent, result.load.warehouse
    calls = []
    real = sc.validate
    monkeypatch.setattr(sc, "validate", lambda *a, **k: calls.append(1) or real(*a, **k))
    shared = sc.shared_report(result.manifest, warehouse, ws, write=False)
    assert calls == [] and shared.warehouse_hash == result.report.warehouse_hash and shared.accepted
    con = duckdb.connect(warehouse)  # the file changes: the report no longer describes it
    con.execute("DELETE FROM t WHERE id = 1")
    con.execute("CHECKPOINT")
    con.close()
    fresh = sc.shared_report(result.manifest, warehouse, ws, write=False)
    assert calls == [1] and not fresh.accepted
