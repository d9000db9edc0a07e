"""One warehouse on several engines: copy a DuckDB warehouse's tables (main schema) into a
SQLite file or a PostgreSQL database, so a question set can be scored on each engine over
the same data (the oracle must answer 100% everywhere; a refusal on one engine only is an
engine-semantics bug in a check).

Types map to the closest native type: DECIMAL stays exact on PostgreSQL (NUMERIC) and becomes
REAL on SQLite (SQLite has no exact decimal); dates and times are ISO text on SQLite (as
SQLite stores them); nested values (lists, structs, maps) become JSON text.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import Any

BATCH = 20_000


def _tables(con: Any) -> list[tuple[str, list[tuple[str, str]]]]:
    rows = con.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = 'main' AND table_catalog = current_database() "
        "AND table_name IN (SELECT table_name FROM information_schema.tables "
        "                   WHERE table_schema = 'main' AND table_type = 'BASE TABLE') "
        "ORDER BY table_name, ordinal_position").fetchall()
    out: dict[str, list[tuple[str, str]]] = {}
    for table, column, dtype in rows:
        out.setdefault(table, []).append((column, str(dtype).upper()))
    return list(out.items())


def _nested(dtype: str) -> bool:
    return dtype.endswith("]") or dtype.startswith(("STRUCT", "MAP", "UNION", "JSON"))


def sqlite_type(dtype: str) -> str:
    """SQLite column type (its affinity) for a DuckDB type."""
    if _nested(dtype):
        return "TEXT"
    if re.match(r"(U?TINYINT|U?SMALLINT|U?INTEGER|U?BIGINT|HUGEINT|UHUGEINT|BOOLEAN)\b", dtype):
        return "INTEGER"
    if re.match(r"(DOUBLE|FLOAT|REAL|DECIMAL|NUMERIC)", dtype):
        return "REAL"
    return "TEXT"


def postgres_type(dtype: str) -> str:
    """PostgreSQL column type for a DuckDB type."""
    if _nested(dtype):
        return "TEXT"
    simple = {"TINYINT": "SMALLINT", "UTINYINT": "SMALLINT", "USMALLINT": "INTEGER", "UINTEGER": "BIGINT",
              "UBIGINT": "NUMERIC(20)", "HUGEINT": "NUMERIC(38)", "UHUGEINT": "NUMERIC(39)",
              "DOUBLE": "DOUBLE PRECISION", "FLOAT": "REAL", "BLOB": "BYTEA", "UUID": "UUID",
              "TIMESTAMP WITH TIME ZONE": "TIMESTAMPTZ", "TIME WITH TIME ZONE": "TIMETZ",
              "TIMESTAMP_S": "TIMESTAMP", "TIMESTAMP_MS": "TIMESTAMP", "TIMESTAMP_NS": "TIMESTAMP"}
    if dtype in simple:
        return simple[dtype]
    if dtype.startswith(("DECIMAL", "NUMERIC")):
        return dtype.replace("DECIMAL", "NUMERIC")
    if dtype in ("SMALLINT", "INTEGER", "BIGINT", "BOOLEAN", "DATE", "TIME", "TIMESTAMP", "INTERVAL", "VARCHAR"):
        return dtype
    return "TEXT"


def _sqlite_value(value: Any) -> Any:
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dt.datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, (list, dict, tuple)):
        return json.dumps(value, default=str)
    if isinstance(value, bool):
        return int(value)
    return value


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def copy_to_sqlite(source: str | Path, target: str | Path) -> Path:
    """A SQLite file with every table of the DuckDB warehouse `source` (replaced if present)."""
    import duckdb

    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    src = duckdb.connect(str(source), read_only=True)
    out = sqlite3.connect(target)
    try:
        for table, cols in _tables(src):
            out.execute(f"CREATE TABLE {_q(table)} ({', '.join(f'{_q(c)} {sqlite_type(t)}' for c, t in cols)})")
            cur = src.execute(f"SELECT * FROM main.{_q(table)}")
            marks = ", ".join("?" for _ in cols)
            while batch := cur.fetchmany(BATCH):
                out.executemany(f"INSERT INTO {_q(table)} VALUES ({marks})",
                                [tuple(_sqlite_value(v) for v in row) for row in batch])
        out.commit()
    finally:
        out.close()
        src.close()
    return target


def _pg_value(value: Any, nested: bool) -> Any:
    if nested and value is not None:
        return json.dumps(value, default=str)
    return value


def copy_to_postgres(source: str | Path, url: str) -> None:
    """Every table of the DuckDB warehouse `source` into the PostgreSQL database at `url`
    (schema public; tables of the same name are replaced)."""
    import duckdb
    import psycopg

    src = duckdb.connect(str(source), read_only=True)
    try:
        with psycopg.connect(url, autocommit=False) as conn:
            for table, cols in _tables(src):
                conn.execute(f"DROP TABLE IF EXISTS public.{_q(table)}")  # type: ignore[arg-type]
                conn.execute(f"CREATE TABLE public.{_q(table)} ("  # type: ignore[arg-type]
                             f"{', '.join(f'{_q(c)} {postgres_type(t)}' for c, t in cols)})")
                nested = [_nested(t) or postgres_type(t) == "TEXT" and t != "VARCHAR" for _, t in cols]
                cur = src.execute(f"SELECT * FROM main.{_q(table)}")
                with conn.cursor().copy(f"COPY public.{_q(table)} FROM STDIN") as copy:  # type: ignore[arg-type]
                    while batch := cur.fetchmany(BATCH):
                        for row in batch:
                            copy.write_row([_pg_value(v, n) for v, n in zip(row, nested, strict=True)])
            conn.commit()
    finally:
        src.close()
