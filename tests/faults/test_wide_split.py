"""Wide tables split into parts (issue 27): a keyed table of more than DIA_WIDE_SPLIT columns is
loaded as `t`, `t__part2`, ... each carrying the key, every part with every row, so the parts join
1:1 on the key back into the file; `slice_join` fails a part that does not; the manifest and the
query agent's schema text say how the parts join."""

from __future__ import annotations

import csv
from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.evaluation.wide_csv import wide_names, write_wide_csv
from dia_assets.agents.interpreter import interpret
from dia_assets.agents.schema_creator.plan import plan_manifest
from dia_assets.contracts.manifest import MANIFEST_VERSION
from dia_assets.pipeline import run


def test_a_1200_column_table_is_split_and_joins_back(tmp_path: Path) -> None:
    data = tmp_path / "data"
    path = write_wide_csv(data / "wide.csv", 1200, 24)  # 1 bad value in 24: still typed (95%)
    lines = path.read_text(encoding="utf-8").splitlines()
    cells = lines[5].split(",")
    header = lines[0].split(",")
    cells[header.index("c01100_int")] = "not-a-number"  # in the second part: NULL there, the row kept
    lines[5] = ",".join(cells)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = run(data, tmp_path / "ws")
    assert result.report.accepted, {k: a.summary for k, a in result.report.axes.items()}
    manifest = result.manifest
    assert manifest.version == MANIFEST_VERSION == 3
    first, second = manifest.table("wide"), manifest.table("wide__part2")
    assert first.parts == ["wide", "wide__part2"] and second.split_of == "wide" and second.part == 2
    assert len(first.columns) == 1000 and len(second.columns) == 201
    assert first.primary_key == second.primary_key == ["id"]
    assert first.source_records == second.source_records == 24
    joins = [k for k in result.report.key_validity if k.kind == "slice_join"]
    assert [(k.table, k.ref_table, k.passed) for k in joins] == [("wide__part2", "wide", True)]

    with duckdb.connect(str(tmp_path / "ws" / "warehouse.duckdb"), read_only=True) as con:
        widths = {t: len(con.execute(f"DESCRIBE {t}").fetchall()) for t in ("wide", "wide__part2")}
        assert widths == {"wide": 1000, "wide__part2": 201}
        joined = con.execute("SELECT * FROM wide JOIN wide__part2 USING (id) ORDER BY id")
        names = [d[0] for d in joined.description]
        rows = joined.fetchall()
        assert sorted(names) == sorted(wide_names(1200)) and len(rows) == 24
        kept = con.execute("SELECT count(*) FROM rejects.wide__part2 WHERE _row_kept").fetchone()[0]
        assert kept == 1
    with path.open(encoding="utf-8", newline="") as fh:
        records = list(csv.DictReader(fh))
    for row, record in zip(rows, records, strict=True):
        got = dict(zip(names, row, strict=True))
        for column in ("id", "c00001_float", "c00999_date", "c01000_int", "c01199_date", "c01002_text"):
            assert str(got[column]) == record[column] or float(got[column]) == float(record[column]), column
    assert dict(zip(names, rows[4], strict=True))["c01100_int"] is None  # record 5, its value NULL in the part


def test_slice_join_fails_when_a_part_loses_a_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dia_assets.agents.schema_creator import sqlgen

    monkeypatch.setenv("DIA_WIDE_SPLIT", "40")
    data = tmp_path / "data"
    write_wide_csv(data / "wide.csv", 100, 10)
    real = sqlgen.staging_ctas_sql
    monkeypatch.setattr(sqlgen, "staging_ctas_sql", lambda t, at: real(t, at) + (
        " WHERE __dia_rowid <> 3" if t.name == "wide__part3" else ""))
    result = run(data, tmp_path / "ws")
    assert [t.name for t in result.manifest.tables] == ["wide", "wide__part2", "wide__part3"]
    joins = {k.table: k for k in result.report.key_validity if k.kind == "slice_join"}
    assert joins["wide__part2"].passed and not joins["wide__part3"].passed
    assert joins["wide__part3"].orphan_rows == 1
    assert "wide__part3 does not join wide 1:1 on (id)" in joins["wide__part3"].examples[0]
    assert not result.report.accepted and not result.report.axes["key_validity"].passed


def test_the_query_agents_schema_text_explains_the_join(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dia_assets.agents.query.schema import SchemaIndex, TableInfo

    monkeypatch.setenv("DIA_WIDE_SPLIT", "40")
    data = tmp_path / "data"
    write_wide_csv(data / "wide.csv", 70, 3)
    manifest = plan_manifest(interpret(data))
    index = SchemaIndex("duckdb", {t.name: TableInfo(t.name, []) for t in manifest.tables})
    index.apply_manifest(manifest)
    text = index.render(["wide", "wide__part2"])
    assert "wide table split in 2 parts (wide, wide__part2), one row per id in each: join them 1:1 USING (id)" in text
    assert "part 2 of wide table wide: one row per id, join wide 1:1 USING (id)" in index.render_compact(["wide__part2"])


def test_a_table_without_a_key_or_within_the_limit_is_not_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIA_WIDE_SPLIT", "40")
    data = tmp_path / "data"
    write_wide_csv(data / "narrow.csv", 40, 3)
    # every column is blank in one of the three rows: no column set can be a key
    rows = [",".join(f"v{j}" for j in range(60))] + [
        ",".join("" if j % 3 == i else f"x{i}" for j in range(60)) for i in range(3)]
    (data / "nokey.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    manifest = plan_manifest(interpret(data))
    assert sorted(t.name for t in manifest.tables) == ["narrow", "nokey"]
    assert all(not t.parts and t.split_of is None for t in manifest.tables)
