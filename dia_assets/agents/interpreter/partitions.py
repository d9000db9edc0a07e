"""Files exported from a range-partitioned table, told by the order of their rows: an
observation for the reviewer, never a key.

PostgreSQL dumps a partitioned table one partition after another, each in its own heap
order, and requires the partition column in every primary key of such a table: a table
partitioned by month on `payment_date` and identified by `payment_id` is declared with the
key `(payment_date, payment_id)`. Row order is weak evidence of that (extracts appended month
by month, in any order within the month, look the same), so the key stays the identifier
(`payment_id`), and the observation is reported (`range_partitioned`, info) with the key the
source database may have declared, for the expert to take in the overrides. Evidence
required, all of it, for a date column D and the table's single-column key K (both complete):

* D truncated to a period (year, month or day: the coarsest giving `MIN_BLOCKS` blocks or
  more) never goes back in file order;
* D itself is out of order: it goes back in at least `MIN_DISORDER` of the row-to-row steps
  (a file ordered by date, even with a few late rows, is no evidence of partitions);
* K goes back at least once (a file ordered by its key is just that);
* blocks of `MIN_BLOCK_ROWS` rows or more on average (nobody partitions a handful of rows,
  and a handful falls into order by chance).

Rows in file order are `rowid` order: the readers keep insertion order. Cost, only for tables
with such a K and D: one `lag()` pass over the rows in that order (for up to `MEASURE_CHUNK`
date columns at once). On a long file the pass
reads a strided subsequence of `LOOK_ROWS` rows (every n-th row): K going back there goes
back in the file; D's disorder is measured at that scale (heap order is disorder at every
scale, late rows are not); the period found there is then checked on every row by one
GROUP BY on the period (first and last row of each block: blocks in period order never
overlap), no sort of the whole file.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from dia_assets.agents.interpreter.table_info import TableInfo, complete
from dia_assets.agents.value_parsing import parse_expression, present
from dia_assets.contracts.interpretation import (
    Column,
    QualityIssue,
    RangePartition,
    Source,
)
from dia_assets.platform.naming import quote_ident

PERIODS = ("year", "month", "day")  # coarsest first
MIN_BLOCKS = 3  # two blocks are as likely a file appended twice
MIN_BLOCK_ROWS = 20  # rows per block on average: a few rows fall into order by chance
MIN_DISORDER = 0.05  # share of steps where D goes back: below it the file is ordered by D
LOOK_ROWS = 10_000  # rows the strided look reads on long files
DATE_TYPES = ("DATE", "TIMESTAMP", "TIMESTAMPTZ")
MEASURE_CHUNK = 100  # date columns measured per query


@dataclass
class Steps:
    """Row-to-row steps in file order: how often each measure goes back or forward."""

    steps: int
    back: dict[str, int]  # period -> steps whose period is earlier than the previous row's
    forward: dict[str, int]  # period -> steps into a later period
    date_back: int
    key_back: int

    def period(self) -> str | None:
        """The coarsest period that never goes back and forms MIN_BLOCKS blocks or more."""
        for p in PERIODS:
            if self.back[p] == 0 and self.forward[p] + 1 >= MIN_BLOCKS:
                return p
        return None


def detect(con: duckdb.DuckDBPyConnection, info: TableInfo) -> RangePartition | None:
    """The partition evidence for the source's single-column primary key, if the rows show it."""
    src = info.source
    pk = src.primary_key
    if pk is None or len(pk.columns) != 1 or src.parent is not None or src.row_count < MIN_BLOCK_ROWS * MIN_BLOCKS:
        return None
    if any(c.name.lower() == "rowid" for c in src.columns):  # the column would hide the row order
        return None
    key = src.column(pk.columns[0])
    if not (complete(key) and key.distinct_count == src.row_count - src.duplicate_rows
            and not key.distinct_approximate):
        return None
    dates = [c for c in src.columns if c.name != key.name and _usable_date(c)]
    stride = src.row_count // LOOK_ROWS
    where = f"WHERE rowid % {stride} = 0" if stride > 1 else ""
    for start in range(0, len(dates), MEASURE_CHUNK):  # the looks of a chunk of dates, one query
        chunk = dates[start:start + MEASURE_CHUNK]
        looks = _measure_many(con, info.table, chunk, key, where)
        for col, look in zip(chunk, looks, strict=True):
            found = _blocks(con, info.table, col, key, src.row_count, look)
            if found and src.row_count >= MIN_BLOCK_ROWS * found[1]:
                return RangePartition(column=col.name, period=found[0], blocks=found[1], unique_key=[key.name])
    return None


def reason(name: str, part: RangePartition) -> str:
    date, key = part.column, ", ".join(part.unique_key)
    return (f"the file is in {part.blocks} blocks by {part.period} of {date!r} while {date!r} itself is not in "
            f"order: {name} may have been exported from a table range-partitioned on {date!r}, for which "
            f"PostgreSQL requires the partition key in the primary key; {key!r} alone is unique")


def issue(src: Source) -> QualityIssue | None:
    """The observation, in words, for the reviewer; the key stays the identifier."""
    part = src.range_partition
    if part is None or src.primary_key is None:
        return None
    key = ", ".join(part.unique_key)
    declared = src.primary_key.columns == [part.column, *part.unique_key]
    return QualityIssue(
        source=src.name, column=part.column, kind="range_partitioned", severity="info", count=part.blocks,
        message=(f"primary key ({part.column}, {key}) as declared; " if declared else f"primary key ({key}); ")
        + reason(src.name, part),
        suggested_action="Nothing to do for a warehouse table that is not partitioned. To mirror a partitioned "
        f"source table, declare ({part.column}, {key}) as the primary key in the overrides.",
    )


def _usable_date(col: Column) -> bool:
    """A complete date or timestamp column that parses everywhere and changes at all."""
    return (col.semantic_type in ("date", "timestamp") and col.inferred_type.upper() in DATE_TYPES
            and complete(col) and not col.unparseable_count and col.distinct_count >= MIN_BLOCKS)


def _value_sql(col: Column) -> str:
    """The column's typed value (text columns parsed as the profile decided)."""
    ident = quote_ident(col.name)
    if col.physical_type.upper() == "VARCHAR":
        return parse_expression(present(ident), col.inferred_type, col.value_format)
    return ident


def _blocks(con: duckdb.DuckDBPyConnection, table: str, date: Column, key: Column, rows: int,
            look: Steps | None = None) -> tuple[str, int] | None:
    """(period, blocks) when the rows are in period blocks, the date out of order and the key
    too; None otherwise. `look`: the date's strided measure, when already taken."""
    stride = rows // LOOK_ROWS
    look = look or _measure(con, table, date, key, f"WHERE rowid % {stride} = 0" if stride > 1 else "")
    period = look.period()
    if not (period and look.date_back >= MIN_DISORDER * look.steps and look.key_back > 0):
        return None
    if stride <= 1:  # the look read every row
        return period, look.forward[period] + 1
    blocks, overlaps = con.execute(
        f"SELECT count(*), count(*) FILTER (lo < prev_hi) FROM (SELECT lo, lag(hi) OVER (ORDER BY p) AS prev_hi "
        f"FROM (SELECT date_trunc('{period}', {_value_sql(date)}) AS p, min(rowid) AS lo, max(rowid) AS hi "
        f"FROM {quote_ident(table)} GROUP BY p))"
    ).fetchone()
    return (period, blocks) if not overlaps and blocks >= MIN_BLOCKS else None


def _measure(con: duckdb.DuckDBPyConnection, table: str, date: Column, key: Column, where: str) -> Steps:
    return _measure_many(con, table, [date], key, where)[0]


def _measure_many(con: duckdb.DuckDBPyConnection, table: str, dates: list[Column], key: Column,
                  where: str) -> list[Steps]:
    """The row-to-row steps of each date (and of the key) in file order, in one pass: a wide
    file with thousands of date columns costs a query per chunk of them, not per column."""
    def trunc(p: str, x: str) -> str:
        return f"date_trunc('{p}', {x})"

    inner = [f"{_value_sql(d)} AS __d{i}" for i, d in enumerate(dates)]
    lags = [f"__d{i}, lag(__d{i}) OVER (ORDER BY r) AS __p{i}" for i in range(len(dates))]
    aggs = ["count(*) FILTER (k < pk)"]
    for i in range(len(dates)):
        d, pd = f"__d{i}", f"__p{i}"
        aggs += [f"count({pd})", f"count(*) FILTER ({d} < {pd})"]
        aggs += [f"count(*) FILTER ({trunc(p, d)} {op} {trunc(p, pd)})" for p in PERIODS for op in ("<", ">")]
    row = con.execute(
        f"SELECT {', '.join(aggs)} FROM (SELECT k, lag(k) OVER (ORDER BY r) AS pk, {', '.join(lags)} "
        f"FROM (SELECT rowid AS r, {_value_sql(key)} AS k, {', '.join(inner)} FROM {quote_ident(table)} {where}))"
    ).fetchone()
    key_back, width, out = row[0], 2 + 2 * len(PERIODS), []
    for i in range(len(dates)):
        steps, date_back, *by_period = row[1 + i * width: 1 + (i + 1) * width]
        out.append(Steps(
            steps=steps, date_back=date_back, key_back=key_back,
            back={p: by_period[2 * j] for j, p in enumerate(PERIODS)},
            forward={p: by_period[2 * j + 1] for j, p in enumerate(PERIODS)},
        ))
    return out
