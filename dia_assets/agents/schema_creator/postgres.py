"""PostgreSQL target: build in DuckDB (the engine that parses the files), then copy
staging, refined and reject tables into PostgreSQL in one transaction. DDL is
transpiled from DuckDB with sqlglot; a failure rolls back and leaves the old tables."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from dia_assets.agents.schema_creator import sqlgen
from dia_assets.agents.schema_creator.load import LoadError, LoadResult, StepHook, build_into
from dia_assets.contracts.manifest import Manifest, ManifestTable
from dia_assets.platform import limits
from dia_assets.platform.files.temp import temp_prefix
from dia_assets.platform.naming import quote_ident as q

if TYPE_CHECKING:
    import psycopg

BATCH = 10_000


def pg_table_ddl(name: str, columns: list[tuple[str, str]], pk: list[str] | None = None) -> str:
    parts = [f"{q(c)} {sqlgen.pg_type(t)}" for c, t in columns]
    if pk:
        parts.append(f"PRIMARY KEY ({', '.join(q(c) for c in pk)})")
    return f"CREATE TABLE {name} ({', '.join(parts)})"


def _layers(table: ManifestTable, pk: bool) -> list[tuple[str, str, list[tuple[str, str]], list[str] | None]]:
    stg = [(c, "VARCHAR") for c in table.source_columns] + sqlgen.PROVENANCE
    return [
        (f"staging.{q(table.name)}", f"staging.{q(table.name)}", stg, None),
        (f"rejects.{q(table.name)}", f"rejects.{q(table.name)}", stg + sqlgen.REJECT_EXTRA, None),
        (q(table.name), f"public.{q(table.name)}", [(c.name, c.type) for c in table.columns],
         table.primary_key if pk else None),
    ]


def ddl_script(manifest: Manifest) -> str:
    """The PostgreSQL DDL the loader runs, as planned (before the data is checked)."""
    out = ["CREATE SCHEMA IF NOT EXISTS staging", "CREATE SCHEMA IF NOT EXISTS rejects"]
    for table in manifest.tables:
        out += [pg_table_ddl(pg_name, columns, pk)
                for _, pg_name, columns, pk in _layers(table, table.primary_key_enforced)]
    for table in manifest.tables:
        out += [_fk_sql(table, fk) for fk in table.foreign_keys if fk.enforced]
    return ";\n".join(out) + ";\n"


def _fk_sql(table: ManifestTable, fk) -> str:
    return (f"ALTER TABLE public.{q(table.name)} ADD FOREIGN KEY ({', '.join(q(c) for c in fk.columns)}) "
            f"REFERENCES public.{q(fk.ref_table)} ({', '.join(q(c) for c in fk.ref_columns)})")


def _copy(con: duckdb.DuckDBPyConnection, cur: psycopg.Cursor, table: ManifestTable, duck_name: str,
          pg_name: str, names: str) -> None:
    """One layer of a table into PostgreSQL. A NUL byte, which DuckDB keeps in a value (it is data),
    cannot be stored in PostgreSQL text: the load stops, saying so, and nothing is altered."""
    import psycopg

    rel = con.execute(f"SELECT {names} FROM {duck_name}")
    try:
        with cur.copy(f"COPY {pg_name} ({names}) FROM STDIN") as copy:
            while rows := rel.fetchmany(BATCH):
                for row in rows:
                    copy.write_row(row)
    except psycopg.DataError as exc:
        if "NUL" not in str(exc):
            raise
        raise LoadError(f"{table.source_path}: a value of table {table.name!r} holds a NUL byte, which PostgreSQL "
                        "text cannot store; nothing was loaded (load it into DuckDB, or remove the NUL from the "
                        "export)") from exc


def load_postgres(
    manifest: Manifest, data_dir: str | Path, url: str, hook: StepHook | None = None
) -> LoadResult:
    import psycopg

    with tempfile.TemporaryDirectory(prefix=temp_prefix("dia-pg-")) as tmp:
        con = duckdb.connect(str(Path(tmp) / "build.duckdb"))
        limits.plan_linearly(con)
        try:
            result = build_into(con, manifest, data_dir, hook)
            with psycopg.connect(url) as pg, pg.transaction(), pg.cursor() as cur:
                cur.execute("CREATE SCHEMA IF NOT EXISTS staging")
                cur.execute("CREATE SCHEMA IF NOT EXISTS rejects")
                for table in reversed(manifest.tables):
                    for _, pg_name, _, _ in _layers(table, False):
                        cur.execute(f"DROP TABLE IF EXISTS {pg_name} CASCADE")
                for table in manifest.tables:
                    stats = result.tables[table.name]
                    for duck_name, pg_name, columns, pk in _layers(table, stats.primary_key_enforced):
                        cur.execute(pg_table_ddl(pg_name, columns, pk))
                        names = ", ".join(q(c) for c, _ in columns)
                        _copy(con, cur, table, duck_name, pg_name, names)
                    if hook:
                        hook(f"postgres:{table.name}")
                for table in manifest.tables:
                    enforced = result.tables[table.name].foreign_keys_enforced
                    for fk in table.foreign_keys:
                        if f"({', '.join(fk.columns)}) -> {fk.ref_table}" in enforced:
                            cur.execute(_fk_sql(table, fk))
        finally:
            con.close()
    result.dialect = "postgres"
    result.warehouse = "postgresql://(redacted)"
    return result
