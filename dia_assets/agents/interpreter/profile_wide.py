"""Pass C for wide tables: the per-column queries batched, a chunk of columns at a time.

A query costs DuckDB a millisecond or two of binding however small it is, and pass C
asks three per column: 3,000 queries for a 1,000-column file. Unpivoting a chunk of
columns answers each question for the whole chunk in one query; a chunk holds at most
CELLS values, which bounds its memory. Text values are cleaned (`present`) after the
unpivot, one expression for the chunk instead of one per column."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb

from dia_assets.agents.interpreter.semantic import shape_sql
from dia_assets.agents.value_parsing import present
from dia_assets.platform.naming import quote_ident

WIDE_COLUMNS = 200  # from this width on, passes B and C run unpivoted
CELLS = 2_000_000


def _chunks(names: list[str], rows: int) -> Iterator[list[str]]:
    size = max(1, CELLS // max(rows, 1))
    for start in range(0, len(names), size):
        yield names[start:start + size]


def _long(table: str, names: list[str], text: bool, position: bool = False) -> str:
    """Every value of the chunk as (__c column name, __v text); for text columns only
    present values (blanks and null tokens are no values), trimmed. `position`: with the
    row id of each value's row as __p."""
    pos, kept, on = ("rowid AS __p, ", ", __p", "COLUMNS(* EXCLUDE (__p))") if position else ("", "", "COLUMNS(*)")
    if text:
        cols = ", ".join(quote_ident(n) for n in names)
        raw = f"(UNPIVOT (SELECT {pos}{cols} FROM {table}) ON {on} INTO NAME __c VALUE __r)"
        return f"(SELECT __c, {present('__r')} AS __v{kept} FROM {raw} WHERE {present('__r')} IS NOT NULL)"
    cols = ", ".join(f"CAST({quote_ident(n)} AS VARCHAR) AS {quote_ident(n)}" for n in names)
    return f"(UNPIVOT (SELECT {pos}{cols} FROM {table}) ON {on} INTO NAME __c VALUE __v)"


def _by_kind(columns: dict[str, bool]) -> Iterator[tuple[list[str], bool]]:
    for text in (True, False):
        names = [n for n, t in columns.items() if t == text]
        if names:
            yield names, text


def examples(
    con: duckdb.DuckDBPyConnection, sample: str, columns: dict[str, bool], rows: int, k: int = 5
) -> dict[str, list[str]]:
    """Up to `k` distinct values per column (name -> is text), from the sample: the first
    ones in sample order, as the per-column query takes them (`list(DISTINCT)` gives its
    values in no set order)."""
    out: dict[str, list[str]] = {n: [] for n in columns}
    for names, text in _by_kind(columns):
        for chunk in _chunks(names, rows):
            for name, values in con.execute(
                f"SELECT __c, list(__v ORDER BY __f, __v)[1:{k}] FROM (SELECT __c, __v, min(__p) AS __f "
                f"FROM {_long(sample, chunk, text, position=True)} GROUP BY ALL) GROUP BY __c"
            ).fetchall():
                out[name] = list(values)
    return out


def patterns(
    con: duckdb.DuckDBPyConnection, sample: str, names: list[str], rows: int, k: int = 5
) -> dict[str, list[tuple[str, int]]]:
    """The `k` most frequent value shapes per text column, from the sample."""
    out: dict[str, list[tuple[str, int]]] = {n: [] for n in names}
    for chunk in _chunks(names, rows):
        got = con.execute(
            f"SELECT __c, {shape_sql('__v')} __p, count(*) __n FROM {_long(sample, chunk, True)} GROUP BY ALL"
        ).fetchall()
        for name, shape, n in sorted(got, key=lambda r: (r[0], -r[2], r[1])):
            if len(out[name]) < k:
                out[name].append((shape, n))
    return out


def value_counts(
    con: duckdb.DuckDBPyConnection, table: str, columns: list[str], rows: int
) -> dict[str, list[tuple[str, int]]]:
    """Every value with its count per column, most frequent first, over the full table."""
    out: dict[str, list[tuple[str, int]]] = {n: [] for n in columns}
    for chunk in _chunks(columns, rows):
        for name, value, n in con.execute(
            f"SELECT __c, __v, count(*) __n FROM {_long(table, chunk, False)} GROUP BY ALL"
        ).fetchall():
            out[name].append((value, n))
    for counts in out.values():
        counts.sort(key=lambda vn: (-vn[1], vn[0]))
    return out
