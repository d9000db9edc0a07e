"""Wide tables (issue 27, item 7): a table with more row checks than DIA_WIDE_CHUNK runs them a
chunk per statement before the refined build (load._refused_rows). That path must build the very
warehouse the one-statement path builds: same tables, columns, types, rows and rejects."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.evaluation.wide_csv import write_wide_csv
from dia_assets.agents.interpreter import interpret
from dia_assets.agents.schema_creator.build import write_plan
from dia_assets.agents.schema_creator.load import load_duckdb

COLUMNS, ROWS = 300, 400
BAD = {(57, "c00004_int"), (210, "c00201_float"), (333, "c00299_date")}  # (row, column): values that do not parse


def _wide_folder(tmp_path: Path) -> Path:
    """A 300-column file with three unparseable values in far-apart columns and one repeated row."""
    data = tmp_path / "data"
    path = write_wide_csv(data / "wide.csv", COLUMNS, ROWS)
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    for row, column in BAD:
        cells = lines[row].split(",")
        cells[header.index(column)] = "not-a-value"
        lines[row] = ",".join(cells)
    lines.append(lines[5])  # an exact duplicate record
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return data


def _snapshot(path: Path) -> dict[str, tuple[list, list]]:
    """Every table: its (name, type) columns and its rows in a fixed order, load time left out."""
    out = {}
    with duckdb.connect(str(path), read_only=True) as con:
        tables = con.execute("SELECT schema_name, table_name FROM duckdb_tables() ORDER BY ALL").fetchall()
        for schema, name in tables:
            ref = f'"{schema}"."{name}"'
            cols = [(r[0], r[1]) for r in con.execute(f"DESCRIBE {ref}").fetchall() if r[0] != "_loaded_at"]
            rows = con.execute(f"SELECT {', '.join(chr(34) + c + chr(34) for c, _ in cols)} FROM {ref} ORDER BY ALL").fetchall()
            out[f"{schema}.{name}"] = (cols, rows)
    return out


def test_chunked_row_checks_build_the_same_warehouse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = _wide_folder(tmp_path)
    manifest, _ = write_plan(interpret(data), tmp_path / "ws")
    table = manifest.table("wide")
    checks = [c for c in table.columns if c.on_error == "reject_row" and c.type not in ("VARCHAR", "TEXT")]
    assert len(checks) > 200  # the planted columns are typed and refuse their row

    monkeypatch.setenv("DIA_WIDE_CHUNK", "100000")
    whole = load_duckdb(manifest, data, tmp_path / "whole.duckdb")
    monkeypatch.setenv("DIA_WIDE_CHUNK", "40")
    chunked = load_duckdb(manifest, data, tmp_path / "chunked.duckdb")

    one, many = whole.tables["wide"], chunked.tables["wide"]
    assert not any("wide table" in n for n in one.notes)
    assert any("row checks ran in" in n and "DIA_WIDE_CHUNK" in n for n in many.notes)
    assert one.rejected == many.rejected == len(BAD)
    assert one.duplicates_removed == many.duplicates_removed == 1
    assert (one.staged, one.refined) == (many.staged, many.refined) == (ROWS + 1, ROWS - len(BAD))
    before, after = _snapshot(tmp_path / "whole.duckdb"), _snapshot(tmp_path / "chunked.duckdb")
    assert set(before) == set(after) and {"main.wide", "staging.wide", "rejects.wide"} <= set(before)
    for name in before:
        assert before[name] == after[name], name
    rejected_rows = {r[-1] for r in duckdb.connect(str(tmp_path / "chunked.duckdb"), read_only=True).execute(
        "SELECT _source_row FROM rejects.wide").fetchall()}
    assert rejected_rows == {row for row, _ in BAD}


def test_chunk_size_must_be_a_positive_number(monkeypatch: pytest.MonkeyPatch) -> None:
    from dia_assets.agents.schema_creator.width import check_chunk

    monkeypatch.setenv("DIA_WIDE_CHUNK", "0")
    with pytest.raises(ValueError, match="DIA_WIDE_CHUNK=0: expected an integer >= 1"):
        check_chunk()
    monkeypatch.setenv("DIA_WIDE_CHUNK", "many")
    with pytest.raises(ValueError, match="DIA_WIDE_CHUNK=many: expected an integer"):
        check_chunk()
