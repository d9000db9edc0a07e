"""`dia dbt export` on a messy file the example lacks: exact duplicate records, lines the reader
cannot split (`_raw_line` rejects, which never reach staging), values that do not parse (rows
refused), a value NULLed and kept (`on_error: null_value`), and Jinja's own markers inside SQL
literals (`{{na}}` as a null token), and a wide table split into parts (DIA_WIDE_SPLIT=4).
`dbt build` on the export gives DIA's rows, table for table, and its tests pass."""

from __future__ import annotations

import duckdb
import pytest
from typer.testing import CliRunner

from dia_assets.cli.app import app
from dia_assets.contracts.interpretation import ValueFormat
from dia_assets.contracts.manifest import Manifest
from dia_assets.platform.workspace import Workspace
from tests.dbt_fixtures import dbt, differences, table_columns
from tests.schema_fixtures import build_ws, csv_source, interpretation

LINES = [
    "id,visit_date,amount,note",
    "1,2024-01-05,10,a",
    "2,last tuesday,11,b",  # refused: not a DATE
    "3,2024-02-30,12,{{na}}",  # refused: not a DATE; the note is a null token
    "1,2024-01-05,10,a",  # an exact duplicate of the first record
    "4",  # ragged: the reader cannot split it
    "5,2024-03-01,13,c,extra",  # ragged
    "6,2024-03-02,unknown,{{NA}}",  # amount NULLed (null_value), row kept; the note a null token
    *(f"{i},2024-04-{i - 5:02d},{i},x{{%{i}" for i in range(7, 30)),  # '{%' in the data
]
OVERRIDES = """version: 1
tables:
  visits:
    columns:
      amount:
        on_error: null_value
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("dbt_messy")
    data = root / "data"
    data.mkdir()
    (data / "visits.csv").write_text("\n".join(LINES) + "\n")
    (data / "wide.csv").write_text("id,a,b,c,d,e\n" + "".join(f"{i},{i},{i + 1},{i + 2},w{i},v{i}\n" for i in range(20)))
    src = csv_source("visits", data / "visits.csv",
                     {"id": "INTEGER", "visit_date": "DATE", "amount": "INTEGER", "note": "VARCHAR"},
                     rows=len(LINES) - 3, pk=["id"], duplicates=1, bad_rows=2,
                     formats={"visit_date": ValueFormat(date_formats=["%Y-%m-%d"]),
                              "note": ValueFormat(null_tokens=["{{na}}"])})
    wide = csv_source("wide", data / "wide.csv", {"id": "INTEGER", **dict.fromkeys("abc", "INTEGER"),
                                                   "d": "VARCHAR", "e": "VARCHAR"}, rows=20, pk=["id"])
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DIA_WIDE_SPLIT", "4")  # wide: id + 5 columns, split into parts of at most 4
        build_ws(root, interpretation(data, src, wide), overrides=OVERRIDES)
    ws = root / "ws"
    project = root / "project"
    out = CliRunner().invoke(app, ["dbt", "export", str(project), "-w", str(ws), "-q"])
    assert out.exit_code == 0, out.output
    code, statuses = dbt(project, "build")
    assert code == 0, statuses
    return {"warehouse": Workspace(ws).warehouse, "project": project, "statuses": statuses,
            "manifest": Manifest.read(Workspace(ws).installed_manifest)}


def test_every_kind_of_reject_is_reproduced(built):
    con = duckdb.connect(str(built["warehouse"]), read_only=True)
    try:
        tables = [t.name for t in built["manifest"].tables]
        assert tables == ["visits", "wide", "wide__part2"]
        for name in tables:
            for dia, ours in ((name, f"dbt.{name}"), (f"rejects.{name}", f"dbt_rejects.{name}")):
                assert table_columns(con, dia) == table_columns(con, ours)
                assert differences(con, dia, ours) == 0, dia
        kinds = con.execute("SELECT _raw_line IS NOT NULL, _row_kept, count(*) FROM dbt_rejects.visits "
                            "GROUP BY ALL ORDER BY ALL").fetchall()
        # 2 refused rows, 1 kept with amount NULL, 2 ragged lines from DIA's reject table
        assert kinds == [(False, False, 2), (False, True, 1), (True, False, 2)]
        assert con.execute("SELECT count(*), count(DISTINCT id), count(note) FROM dbt.visits").fetchone() == (25, 25, 24)
        assert con.execute("SELECT count(*) FROM dbt.visits WHERE note LIKE 'x{%%'").fetchone()[0] == 23
    finally:
        con.close()


def test_jinja_markers_in_the_sql_are_kept_verbatim(built):
    model = (built["project"] / "models" / "refined" / "visits.sql").read_text()
    assert "{% raw %}" in model and "'{{na}}'" in model


def test_the_parts_of_a_wide_table_are_tested_to_join_one_to_one(built):
    slices = {u: s for u, s in built["statuses"].items() if ".dia_relationships_wide" in u}
    assert len(slices) == 2 and set(slices.values()) == {"pass"}, slices
    assert all(s in ("pass", "success") for s in built["statuses"].values())
