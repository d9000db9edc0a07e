"""Exact distinct counts of integer text columns without hashing their text.

Whether a long identifier column is unique must be exact, and `count(DISTINCT text)` over
10M values builds a hash table of 10M strings (at 10M rows it spilled and cost more than
the column's whole profile). When every value of the column is the canonical text of a
64-bit integer (`CAST(TRY_CAST(v AS BIGINT) AS VARCHAR) = v`: no sign, leading zero,
space, fraction or exponent that a second spelling of the same number could carry), text
and integer determine each other, so distinct texts = distinct integers; those are
counted as set bits of a bitmap over [min, max] (`bitstring_agg`), or by a hash of 8-byte
integers when the range is too wide for a bitmap. One scan of the column checks and
counts; any other value answers None and the caller counts the text."""

from __future__ import annotations

import duckdb

from dia_assets.platform.naming import quote_ident

BIGINT_MIN, BIGINT_MAX = -(2**63), 2**63 - 1
BITMAP_MAX_BITS = 1 << 26  # 8 MB per aggregate state; DuckDB refuses much wider ranges
BITMAP_BITS_PER_ROW = 64  # a sparser bitmap costs more to clear and count than hashing


def distinct_integer_texts(
    con: duckdb.DuckDBPyConnection, table: str, column: str, low: object, high: object, rows: int,
) -> int | None:
    """count(DISTINCT column) of `table`, exactly, when every non-NULL value is the canonical
    text of an integer in [low, high] (the parsed minimum and maximum); else None."""
    try:
        lo, hi = int(str(low)), int(str(high))
    except (TypeError, ValueError):
        return None
    if lo > hi or lo < BIGINT_MIN or hi > BIGINT_MAX:
        return None
    span = hi - lo + 1
    if span <= min(BITMAP_MAX_BITS, BITMAP_BITS_PER_ROW * max(rows, 1)):
        counted = f"bit_count(bitstring_agg(__x, {lo}, {hi}) FILTER (__x BETWEEN {lo} AND {hi}))"
    else:
        counted = "count(DISTINCT __x)"
    other, distinct = con.execute(
        f"SELECT count(*) FILTER (__x IS NULL OR __x < {lo} OR __x > {hi} OR CAST(__x AS VARCHAR) <> __c), "
        f"{counted} FROM (SELECT __c, TRY_CAST(__c AS BIGINT) AS __x FROM "
        f"(SELECT {quote_ident(column)} AS __c FROM {table}) WHERE __c IS NOT NULL)"
    ).fetchone()
    if other:
        return None
    return int(distinct or 0)
