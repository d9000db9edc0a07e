"""Exact distinct counts of integer text by bitmap must equal count(DISTINCT text), and must
give up (None) whenever two spellings of one number could hide a duplicate or split one."""

from __future__ import annotations

import duckdb
import pytest

from dia_assets.agents.interpreter import integer_distinct as d
from dia_assets.agents.interpreter import profile as p


def _table(values: list[str | None]) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute("CREATE TABLE t (v VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?)", [(v,) for v in values])
    return con


def _text_distinct(con: duckdb.DuckDBPyConnection) -> int:
    return con.execute("SELECT count(DISTINCT v) FROM t").fetchone()[0]


@pytest.mark.parametrize("values", [
    ["1", "2", "3", None, "2", "-5", "0"],
    [str(i * 7919) for i in range(500)] + [None, "0"],  # sparse: wider than the bitmap allows per row
    [str(2**62), str(-(2**62)), "1", "1"],  # range far beyond any bitmap: hashed as integers
])
def test_canonical_integers_counted_exactly(values: list[str | None]) -> None:
    con = _table(values)
    present = [int(v) for v in values if v is not None]
    assert d.distinct_integer_texts(con, "t", "v", min(present), max(present), len(values)) == _text_distinct(con)


@pytest.mark.parametrize("other", ["007", "+7", " 7", "7.0", "1e1", "-0", "0x07", "1_0"])
def test_a_second_spelling_gives_up(other: str) -> None:
    """'7' and '007' are two distinct texts but one integer: counting integers would be wrong."""
    con = _table(["7", "8", other])
    assert d.distinct_integer_texts(con, "t", "v", 0, 100, 3) is None


def test_values_outside_the_given_range_give_up() -> None:
    con = _table(["1", "2", "50"])
    assert d.distinct_integer_texts(con, "t", "v", 1, 2, 3) is None
    assert d.distinct_integer_texts(con, "t", "v", "x", 2, 3) is None
    assert d.distinct_integer_texts(con, "t", "v", 1, 2**70, 3) is None


def test_profile_keeps_exact_counts_and_uniqueness(monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the profiler (bitmap path on): a canonical id with one duplicate is not unique,
    a column mixing '7' and '007' is counted as text, both equal count(DISTINCT)."""
    monkeypatch.setattr(p, "INTEGER_DISTINCT_MIN_ROWS", 0)
    calls: list[str] = []
    real = p.distinct_integer_texts
    monkeypatch.setattr(p, "distinct_integer_texts", lambda *a: calls.append(a[2]) or real(*a))
    con = duckdb.connect()
    con.execute("""CREATE TABLE t AS SELECT
      CAST(CASE WHEN i = 999 THEN 5 ELSE i END AS VARCHAR) AS order_id,
      CASE WHEN i = 1 THEN '+2' ELSE CAST(i AS VARCHAR) END AS code_id,
      CAST(i AS VARCHAR) AS row_id
      FROM range(1000) r(i)""")
    profile = p.profile_table(con, "t")
    cols = {c.name: c for c in profile.columns}
    truth = dict(zip(cols, con.execute(
        "SELECT count(DISTINCT order_id), count(DISTINCT code_id), count(DISTINCT row_id) FROM t").fetchone(),
        strict=True))
    assert {n: c.distinct_count for n, c in cols.items()} == truth
    assert not cols["order_id"].unique and cols["row_id"].unique
    assert not cols["order_id"].distinct_approximate
    assert truth["code_id"] == 1000 and cols["code_id"].unique  # 1000 texts, 999 integers
    assert {"order_id", "code_id", "row_id"} <= set(calls)
