"""Spark warehouses for the tests: local mode (`local[2]`) on pyspark, one JVM per xdist worker.
Without pyspark (`pip install 'dia[spark]'`, `make test-spark`) the Spark tests skip, except
where Spark is required (CI, DIA_REQUIRE_SPARK=1): there a missing pyspark or Java fails."""

from __future__ import annotations

import importlib.util
import os
import uuid
from pathlib import Path

import duckdb
import pytest

from dia_assets.platform.naming import quote_ident as q
from dia_assets.platform.naming import sql_str
from dia_assets.platform.warehouse.spark import set_current

MASTER = "local[2]"


def require_spark() -> None:
    """Skip (or fail where Spark is required) without pyspark."""
    if importlib.util.find_spec("pyspark") is None:
        reason = "pyspark is not installed (make test-spark installs it)"
        if os.environ.get("DIA_REQUIRE_SPARK"):
            pytest.fail(f"Spark tests are required here but {reason}", pytrace=False)
        pytest.skip(reason)


def spark_target(root: Path) -> str:
    return f"spark://{MASTER}{root.resolve()}"


def spark_from_duckdb(duck: Path, root: Path) -> str:
    """A Spark warehouse holding a DuckDB file's tables (its `main` refined, its other schemas as
    layers of the same name), installed as the current version."""
    build_id = uuid.uuid4().hex[:12]
    con = duckdb.connect(str(duck), read_only=True)
    try:
        for schema, table in con.execute(
                "SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = current_database()").fetchall():
            layer = "refined" if schema == "main" else schema
            out = root / build_id / layer / table
            out.mkdir(parents=True)
            con.execute(f"COPY {q(schema)}.{q(table)} TO {sql_str(str(out / 'part-0.parquet'))} (FORMAT parquet)")
    finally:
        con.close()
    set_current(root, build_id)
    return spark_target(root)
