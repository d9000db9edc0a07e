"""A read connection to a built warehouse, as its owner (privileged, uncapped: `Dialect.owner`,
never the agents' gated `Connection`): the schema creator validates through it, lineage and the
table statistics read through it.

Validation SQL is written once in DuckDB's dialect and transpiled with sqlglot for the
target's engine, so the checks read every warehouse the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import sqlglot
from sqlglot import exp

from dia_assets.platform.warehouse.base import build_dialect


def transpile(sql: str, dialect: str, schemas: dict[str, str] | None = None,
              only: frozenset[str] | None = None) -> str:
    """DuckDB SQL (every statement of it) in `dialect`: the checks are written once, for DuckDB.
    `schemas`: qualifiers to rename (`staging` -> a PostgreSQL build's own staging schema), for
    the tables in `only` when given (an incremental build: the kept tables stay where they are)."""
    if dialect == "duckdb" and not schemas:
        return sql
    if not schemas:
        return ";\n".join(sqlglot.transpile(sql, read="duckdb", write=dialect))

    def rename(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Table) and node.args.get("db") is not None and node.db in schemas \
                and (only is None or node.name in only):
            node.set("db", exp.to_identifier(schemas[node.db], quoted=True))
        return node

    return ";\n".join(e.transform(rename).sql(dialect) for e in sqlglot.parse(sql, read="duckdb") if e)


class Target:
    """A read connection to a built warehouse."""

    def __init__(self, warehouse: str | Path, con: Any = None, schemas: dict[str, str] | None = None,
                 only: frozenset[str] | None = None):
        """`schemas`: read a build that is not installed yet (PostgreSQL's build schemas: layer
        -> schema); unqualified names resolve to its refined schema (`search_path`), then, for
        an incremental build holding only the tables in `only`, to the installed one."""
        self.warehouse = str(warehouse)
        self.engine = build_dialect(warehouse)
        self.dialect = self.engine.name
        self._own = con is None
        self.con = con if con is not None else self.engine.open_owner(self.warehouse)
        if schemas is None and self.engine.installed_schemas is not None:
            schemas = self.engine.installed_schemas(self.warehouse)
        self.schemas, self.only = dict(schemas or {}), only
        refined = self.schemas.get(self.engine.default_schema or "")
        if refined:
            path = [refined] + ([self.engine.default_schema] if only is not None else [])
            self.con.execute(self.engine.search_path_sql(path))

    def sql(self, duckdb_sql: str) -> str:
        return transpile(duckdb_sql, self.dialect, self.schemas, self.only)

    def rows(self, duckdb_sql: str) -> list[tuple]:
        return list(self.con.execute(self.sql(duckdb_sql)).fetchall())

    def scalar(self, duckdb_sql: str) -> Any:
        rows = self.rows(duckdb_sql)
        return rows[0][0] if rows else None

    def columns(self, schema: str, table: str) -> list[tuple[str, str]]:
        """(name, data type) of a table, in order."""
        if self.only is None or table in self.only:
            schema = self.schemas.get(schema, schema)
        if hasattr(self.con, "columns"):  # an engine without information_schema (Spark)
            return self.con.columns(schema, table)
        return [
            (r[0], r[1]) for r in self.rows(
                "SELECT column_name, data_type FROM information_schema.columns "
                f"WHERE table_schema = '{schema}' AND table_name = '{table}' ORDER BY ordinal_position"
            )
        ]

    @property
    def default_schema(self) -> str:
        return self.engine.default_schema

    def close(self) -> None:
        if self._own:
            self.con.close()

    def __enter__(self) -> Target:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
