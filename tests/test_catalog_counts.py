"""The semantic catalog's counts describe the installed tables: staff.csv has 405 rows, five of
them duplicates the build removes, so the `staff` entity says 400 (what COUNT(*) returns), and
its `role` attribute counts the canonical roles of the table, not the file's raw spellings."""

from __future__ import annotations

import duckdb

from dia_assets.agents.catalog.refresh import refresh_catalog
from dia_assets.pipeline import run
from dia_assets.platform.memory.store import MemoryStore
from tests.memory_fixtures import HashEmbedder, db_url, pg_server  # noqa: F401
from tests.schema_fixtures import EXAMPLES


def test_catalog_counts_come_from_the_table(tmp_path, db_url, example_interpretation):  # noqa: F811
    ws, warehouse = tmp_path / "ws", tmp_path / "hospital.duckdb"
    built = run(EXAMPLES / "data", ws, warehouse=str(warehouse), interpretation=example_interpretation,
                overrides_seed=EXAMPLES / "data" / "overrides.yaml")
    assert built.report.installed
    (ws / "interpretation.json").write_text(example_interpretation.to_json())  # as `dia interpret` leaves it
    staff_src = next(s for s in example_interpretation.sources if s.name == "staff")
    role_src = next(c for c in staff_src.columns if c.name == "role")
    with duckdb.connect(str(warehouse), read_only=True) as con:
        counts = {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in ("staff", "payroll")}
        roles, nulls = con.execute("SELECT count(DISTINCT role), count(*) - count(role) FROM staff").fetchone()
    assert staff_src.row_count > counts["staff"] and role_src.distinct_count > roles  # the trap
    with MemoryStore.open(url=db_url, embedder=HashEmbedder()) as store:
        catalog = refresh_catalog(ws, str(warehouse), store)
    nodes = catalog.by_id()
    assert nodes["entity:staff"].row_count == counts["staff"] == 400
    assert nodes["entity:payroll"].row_count == counts["payroll"]
    role = nodes["attribute:staff.role"]
    assert role.row_count == counts["staff"] and role.distinct_count == roles
    assert role.null_fraction == nulls / counts["staff"]
