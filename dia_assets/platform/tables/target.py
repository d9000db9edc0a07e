"""A read connection to a built warehouse (DuckDB file or PostgreSQL URL): the schema creator
validates through it, lineage and the table statistics read through it.

Validation SQL is written once in DuckDB's dialect and transpiled with sqlglot for
PostgreSQL, so the checks read both warehouses the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import sqlglot

from dia_assets.platform import limits
from dia_assets.platform.warehouse.base import build_dialect


def transpile(sql: str, dialect: str) -> str:
    """DuckDB SQL (every statement of it) in `dialect`: the checks are written once, for DuckDB."""
    if dialect == "duckdb":
        return sql
    return ";\n".join(sqlglot.transpile(sql, read="duckdb", write=dialect))


class Target:
    """A read connection to a built warehouse."""

    def __init__(self, warehouse: str | Path, con: Any = None):
        self.warehouse = str(warehouse)
        self.dialect = build_dialect(warehouse).name
        self._own = con is None
        if con is not None:
            self.con = con
        elif self.dialect == "postgres":
            import psycopg

            self.con = psycopg.connect(self.warehouse, autocommit=True)
        else:
            self.con = duckdb.connect(self.warehouse, read_only=True)
            limits.plan_linearly(self.con)

    def sql(self, duckdb_sql: str) -> str:
        return transpile(duckdb_sql, self.dialect)

    def rows(self, duckdb_sql: str) -> list[tuple]:
        if self.dialect == "postgres":
            with self.con.cursor() as cur:
                cur.execute(self.sql(duckdb_sql))
                return list(cur.fetchall())
        return self.con.execute(duckdb_sql).fetchall()

    def scalar(self, duckdb_sql: str) -> Any:
        rows = self.rows(duckdb_sql)
        return rows[0][0] if rows else None

    def columns(self, schema: str, table: str) -> list[tuple[str, str]]:
        """(name, data type) of a table, in order."""
        return [
            (r[0], r[1]) for r in self.rows(
                "SELECT column_name, data_type FROM information_schema.columns "
                f"WHERE table_schema = '{schema}' AND table_name = '{table}' ORDER BY ordinal_position"
            )
        ]

    @property
    def default_schema(self) -> str:
        return "public" if self.dialect == "postgres" else "main"

    def close(self) -> None:
        if self._own:
            self.con.close()

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
