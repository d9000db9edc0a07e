"""Pass C for wide tables: the per-column queries batched, a chunk of columns at a time.

A query costs DuckDB a millisecond or two of binding however small it is, and pass C
asks three per column: 3,000 queries for a 1,000-column file. Unpivoting a chunk of
columns answers each question for the whole chunk in one query, within the memory limit."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb

from dia_assets.agents.interpreter.naming import quote_ident
from dia_assets.agents.interpreter.semantic import shape_sql

WIDE_COLUMNS = 200  # from this width on, pass C runs batched
CHUNK = 64


def _chunks(exprs: dict[str, str]) -> Iterator[dict[str, str]]:
    names = list(exprs)
    for start in range(0, len(names), CHUNK):
        yield {n: exprs[n] for n in names[start:start + CHUNK]}


def _long(table: str, exprs: dict[str, str]) -> str:
    """Every non-NULL value of the chunk as (__c column name, __v text)."""
    select = ", ".join(f"CAST({e} AS VARCHAR) AS {quote_ident(n)}" for n, e in exprs.items())
    return f"(UNPIVOT (SELECT {select} FROM {table}) ON COLUMNS(*) INTO NAME __c VALUE __v)"


def examples(con: duckdb.DuckDBPyConnection, sample: str, exprs: dict[str, str], k: int = 5) -> dict[str, list[str]]:
    """Up to `k` distinct values per column, from the sample."""
    out: dict[str, list[str]] = {n: [] for n in exprs}
    for chunk in _chunks(exprs):
        for name, values in con.execute(
            f"SELECT __c, list(DISTINCT __v) FROM {_long(sample, chunk)} GROUP BY __c"
        ).fetchall():
            out[name] = list(values)[:k]
    return out


def patterns(
    con: duckdb.DuckDBPyConnection, sample: str, exprs: dict[str, str], k: int = 5
) -> dict[str, list[tuple[str, int]]]:
    """The `k` most frequent value shapes per column, from the sample."""
    out: dict[str, list[tuple[str, int]]] = {n: [] for n in exprs}
    for chunk in _chunks(exprs):
        rows = con.execute(
            f"SELECT __c, {shape_sql('__v')} __p, count(*) __n FROM {_long(sample, chunk)} GROUP BY ALL"
        ).fetchall()
        for name, shape, n in sorted(rows, key=lambda r: (r[0], -r[2], r[1])):
            if len(out[name]) < k:
                out[name].append((shape, n))
    return out


def value_counts(
    con: duckdb.DuckDBPyConnection, table: str, columns: list[str]
) -> dict[str, list[tuple[str, int]]]:
    """Every value with its count per column, most frequent first, over the full table."""
    out: dict[str, list[tuple[str, int]]] = {n: [] for n in columns}
    for chunk in _chunks({n: quote_ident(n) for n in columns}):
        for name, value, n in con.execute(
            f"SELECT __c, __v, count(*) __n FROM {_long(table, chunk)} GROUP BY ALL"
        ).fetchall():
            out[name].append((value, n))
    for counts in out.values():
        counts.sort(key=lambda vn: (-vn[1], vn[0]))
    return out
