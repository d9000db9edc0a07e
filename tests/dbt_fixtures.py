"""Running dbt on an exported project and comparing its tables with DIA's (tests/test_dbt_export*.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb

PROJECT = "dia_warehouse"  # dbt_export.PROJECT, as dbt's node ids spell it


def dbt(project: Path, *args: str, warehouse: Path | None = None) -> tuple[int, dict[str, str]]:
    """Run dbt on the exported project in a child process (dbt-duckdb keeps its database open
    for the life of the process), offline: no usage stats, no `dbt deps`. Returns the exit code
    and each node's status from run_results.json."""
    env = {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    if warehouse is not None:
        env["DIA_DBT_WAREHOUSE"] = str(warehouse)
    done = subprocess.run(
        [sys.executable, "-c", "from dbt.cli.main import cli; cli()", *args, "--project-dir", str(project),
         "--profiles-dir", str(project), "--log-path", str(project / "logs")],
        env=env, capture_output=True, text=True, timeout=300)
    results = json.loads((project / "target" / "run_results.json").read_text())["results"]
    assert results, done.stdout + done.stderr
    return done.returncode, {r["unique_id"]: r["status"] for r in results}


def table_columns(con: duckdb.DuckDBPyConnection, table: str) -> list[tuple[str, str]]:
    return [(r[0], r[1]) for r in con.execute(f"DESCRIBE {table}").fetchall()]


def differences(con: duckdb.DuckDBPyConnection, a: str, b: str) -> int:
    """Rows in one table and not the other, duplicates counted (EXCEPT ALL both ways)."""
    return sum(con.execute(f"SELECT count(*) FROM (SELECT * FROM {x} EXCEPT ALL SELECT * FROM {y})").fetchone()[0]
               for x, y in ((a, b), (b, a)))
