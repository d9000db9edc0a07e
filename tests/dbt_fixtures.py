"""Running dbt on an exported project and comparing its tables with DIA's (tests/test_dbt_export*.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from dia_assets.contracts.interpretation import Source, ValueFormat
from dia_assets.pipeline import BuildResult
from tests.schema_fixtures import build_ws, csv_source, interpretation

PROJECT = "dia_warehouse"  # dbt_export.PROJECT, as dbt's node ids spell it


def dbt(project: Path, *args: str, warehouse: Path | None = None,
        env: dict[str, str] | None = None) -> tuple[int, dict[str, str]]:
    """Run dbt on the exported project in a child process (dbt-duckdb keeps its database open
    for the life of the process), offline: no usage stats, no `dbt deps`. Returns the exit code
    and each node's status from run_results.json. `env`: more environment (dbt-postgres's
    connection, DIA_DBT_PG_*)."""
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", **(env or {})}
    if warehouse is not None:
        env["DIA_DBT_WAREHOUSE"] = str(warehouse)
    done = subprocess.run(
        [sys.executable, "-c", "from dbt.cli.main import cli; cli()", *args, "--project-dir", str(project),
         "--profiles-dir", str(project), "--log-path", str(project / "logs")],
        env=env, capture_output=True, text=True, timeout=300)
    results = json.loads((project / "target" / "run_results.json").read_text())["results"]
    assert results, done.stdout + done.stderr
    return done.returncode, {r["unique_id"]: r["status"] for r in results}


def assert_matches_golden(project: Path, golden: Path) -> None:
    """The project's YAML (tests, descriptions, sources), macros and model SQL equal the files under
    `golden`, byte for byte (profiles.yml names a temporary path: left out). DIA_UPDATE_SNAPSHOTS=1
    rewrites them: review the diff."""
    written = sorted(p.relative_to(project) for p in project.rglob("*")
                     if p.is_file() and p.parts[len(project.parts)] in ("models", "macros")
                     or p.name == "dbt_project.yml" and p.parent == project)
    if os.environ.get("DIA_UPDATE_SNAPSHOTS") == "1":
        shutil.rmtree(golden, ignore_errors=True)
        for rel in written:
            (golden / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(project / rel, golden / rel)
    found = sorted(p.relative_to(golden) for p in golden.rglob("*") if p.is_file())
    assert written == found, "write the goldens with DIA_UPDATE_SNAPSHOTS=1 and review them"
    for rel in written:
        assert (project / rel).read_text() == (golden / rel).read_text(), \
            f"{rel} differs from its golden; regenerate with DIA_UPDATE_SNAPSHOTS=1 if intended"


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {table}").fetchall()]


def pg_table_columns(con: Any, table: str) -> list[tuple[str, str]]:
    """A PostgreSQL table's (name, type with modifiers), in order (`con`: a psycopg connection)."""
    return [(r[0], r[1]) for r in con.execute(
        "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = %s::regclass "
        "AND attnum > 0 AND NOT attisdropped ORDER BY attnum", (table,)).fetchall()]


def differences(con: Any, a: str, b: str) -> int:
    """Rows in one table and not the other, duplicates counted (EXCEPT ALL both ways); `con`
    a DuckDB or psycopg connection."""
    return sum(con.execute(f"SELECT count(*) FROM (SELECT * FROM {x} EXCEPT ALL SELECT * FROM {y})").fetchone()[0]
               for x, y in ((a, b), (b, a)))


# The messy file of tests/test_dbt_export_messy.py (and of its PostgreSQL twin)
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


def build_messy(root: Path, warehouse: str | None = None, *extra: Source) -> BuildResult:
    """Write the messy files under `root`/data and build them into `root`/ws (and `warehouse`):
    visits (LINES) and a wide table split into parts (DIA_WIDE_SPLIT=4); `extra` sources
    (their files written by the caller) join the build."""
    data = root / "data"
    data.mkdir(exist_ok=True)
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
        return build_ws(root, interpretation(data, src, wide, *extra), overrides=OVERRIDES, warehouse=warehouse)
