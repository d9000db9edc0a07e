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
from dia_assets.contracts.manifest import Manifest
from dia_assets.platform.workspace import Workspace
from tests.dbt_fixtures import build_messy, dbt, differences, table_columns


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("dbt_messy")
    build_messy(root)
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
