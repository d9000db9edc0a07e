"""Columns whose values repeat are profiled over their (value, count) groups; every figure
must equal the row-by-row pass (the mean up to rounding: a weighted sum there)."""

from __future__ import annotations

import math

import duckdb
import pytest

from dia_assets.agents.interpreter import profile as p
from dia_assets.agents.interpreter import sample
from dia_assets.agents.interpreter.numbers import non_finite_text_sql
from dia_assets.contracts.interpretation import ValueFormat

MESSY = """
CREATE TABLE t AS SELECT
  CAST(i AS VARCHAR) AS id,
  CASE i % 7 WHEN 0 THEN NULL WHEN 1 THEN '' WHEN 2 THEN ' n/a ' WHEN 3 THEN 'NULL'
             ELSE CAST(i % 13 AS VARCHAR) END AS qty,
  CASE i % 211 WHEN 0 THEN ' 3.50' WHEN 1 THEN 'abc' WHEN 2 THEN 'NaN' WHEN 3 THEN '1e999'
              ELSE CAST((i % 9) / 4 AS VARCHAR) END AS price,
  ['red', 'Red', 'red ', 'blue', 'BLUE', '-', 'green'][1 + i % 7] AS colour,
  CASE WHEN i % 397 = 0 THEN '2024-13-01' ELSE '2024-0' || CAST(1 + i % 9 AS VARCHAR) || '-1' || CAST(i % 9 AS VARCHAR) END
    AS day,
  CASE WHEN i % 499 = 0 THEN '99999999999999999999999999999999999999999' ELSE CAST(i % 4 AS VARCHAR) END AS big,
  CASE WHEN i % 3 = 0 THEN '1e999' ELSE CAST(i % 40 AS VARCHAR) || '.25' END AS amount
FROM range(3000) r(i)
"""


def _profile(monkeypatch: pytest.MonkeyPatch, min_rows: int) -> p.SourceProfile:
    monkeypatch.setattr(p, "GROUPED_MIN_ROWS", min_rows)
    con = duckdb.connect()
    con.execute(MESSY)
    return p.profile_table(con, "t")


def test_grouped_profile_equals_row_by_row(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = _profile(monkeypatch, 10**12)
    groups = _profile(monkeypatch, 0)
    assert (groups.rows, groups.duplicate_rows) == (rows.rows, rows.duplicate_rows)
    assert (groups.variants, groups.outliers, groups.huge_fields, groups.non_finite) == (
        rows.variants, rows.outliers, rows.huge_fields, rows.non_finite)
    for g, r in zip(groups.columns, rows.columns, strict=True):
        gd, rd = g.model_dump(exclude={"quantiles", "mean", "examples"}), r.model_dump(
            exclude={"quantiles", "mean", "examples"})
        assert gd == rd, g.name
        assert g.mean == r.mean or math.isclose(g.mean, r.mean, rel_tol=1e-12), g.name
        assert g.quantiles == r.quantiles, g.name  # exact both ways
    types = {c.name: c.inferred_type for c in groups.columns}
    assert types["price"] == "DOUBLE" and types["day"] == "DATE" and types["big"] == "VARCHAR", types
    assert any(c.null_token_count for c in groups.columns) and any(c.unparseable_count for c in groups.columns)
    assert groups.non_finite and groups.variants


def test_trim_skipped_only_where_it_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pass B and the outlier counts skip trim() on ASCII text without edge spaces; text
    padded with spaces, no-break or ideographic spaces must profile as with trim everywhere."""
    con = duckdb.connect()
    con.execute("""CREATE TABLE t AS SELECT
      CASE i % 5 WHEN 0 THEN ' ' || CAST(i AS VARCHAR) WHEN 1 THEN CAST(i AS VARCHAR) || chr(160)
                 WHEN 2 THEN chr(12288) || CAST(i % 50 AS VARCHAR) || '.5' WHEN 3 THEN chr(9) || '7'
                 ELSE CAST(i % 40 AS VARCHAR) END AS amount,
      CASE i % 4 WHEN 0 THEN ' n/a' WHEN 1 THEN 'NULL' || chr(8239) ELSE 'Zoë ' || CAST(i % 9 AS VARCHAR) END AS label
    FROM range(2000) r(i)""")
    skipped = p.profile_table(con, "t")
    monkeypatch.setattr(p, "trim_sql", lambda col: f"trim({col})")
    plain = p.profile_table(con, "t")
    assert skipped.outliers == plain.outliers
    for a, b in zip(skipped.columns, plain.columns, strict=True):
        assert a.model_dump() == b.model_dump()
    assert skipped.columns[0].value_format.trim and skipped.columns[0].null_token_count == 0
    assert skipped.columns[1].null_token_count == 1000


@pytest.mark.parametrize("id_name", ["id", "rowid", "__k"])
@pytest.mark.parametrize("slice_rows", [1 << 20, 40_000])
def test_sample_drawn_by_row_id_is_the_reservoir_sample(
    monkeypatch: pytest.MonkeyPatch, id_name: str, slice_rows: int
) -> None:
    """The sample draws row ids and fetches the rows, in slices of row ids from the last:
    the same rows in the same order as the reservoir over every column (a column named
    rowid falls back to that; one named like the ordering column does not collide)."""
    monkeypatch.setattr(sample, "SLICE_ROWS", slice_rows)
    con = duckdb.connect(config={"preserve_insertion_order": True})
    con.execute(f"CREATE TABLE t AS SELECT CAST(i AS VARCHAR) AS {id_name}, CAST(hash(i) % 97 AS VARCHAR) AS v "
                "FROM range(300000) r(i)")
    want = con.execute(f"SELECT * FROM t USING SAMPLE reservoir({p.SAMPLE_ROWS} ROWS) REPEATABLE (7)").fetchall()
    calls: list[str] = []

    class Spy:
        def __init__(self, inner: duckdb.DuckDBPyConnection) -> None:
            self.inner = inner

        def execute(self, sql: str, *args: object) -> duckdb.DuckDBPyConnection:
            calls.append(sql)
            return self.inner.execute(sql, *args)

    sample.draw_sample(Spy(con), "t", [id_name, "v"], "__sample")  # type: ignore[arg-type]
    assert con.execute("SELECT * FROM __sample").fetchall() == want
    assert [r[0] for r in con.execute("DESCRIBE __sample").fetchall()] == [id_name, "v"]
    fetches = [c for c in calls if c.startswith("INSERT")]
    assert len(fetches) == (0 if id_name == "rowid" else -(-300000 // slice_rows))
    p.profile_table(con, "t")
    assert not con.execute("SELECT * FROM duckdb_tables() WHERE table_name LIKE '__sample%'").fetchall()


@pytest.mark.parametrize("grouped_min_rows", [0, 10**12])
def test_non_finite_from_the_parsed_value_equals_the_text_test(
    monkeypatch: pytest.MonkeyPatch, grouped_min_rows: int
) -> None:
    """Pass B counts NaN/Infinity words and overflowing numbers of a decimal column from the
    DOUBLE it parsed already; the count must equal the test on the text itself."""
    monkeypatch.setattr(p, "GROUPED_MIN_ROWS", grouped_min_rows)
    specials = ["inf", "INF", " -Infinity ", "1e999", "-1e999", "nan", " NaN ", "na", "", "n/a", "+inf", "infinity"]
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT CASE WHEN i % 37 = 0 THEN ? [1 + (i // 37) % 12] WHEN i % 41 = 0 THEN NULL "
                "ELSE CAST(i % 500 AS VARCHAR) || '.25' END AS x, "
                "CASE WHEN i % 37 = 0 THEN ? [1 + (i // 37) % 12] WHEN i % 41 = 0 THEN NULL "
                "ELSE CAST(i % 500 AS VARCHAR) END AS n FROM range(20000) r(i)", [specials, specials])
    profile = p.profile_table(con, "t")
    for name in ("x", "n"):
        want = con.execute(f"SELECT {non_finite_text_sql(name)} FROM t").fetchone()[0]
        assert want > 0 and profile.non_finite[name] == want, name
    types = [c.inferred_type for c in profile.columns]
    assert types[0].startswith(("DECIMAL", "DOUBLE")) and types[1] in ("INTEGER", "BIGINT"), types
    decimal = p.TypeDecision("decimal", "DECIMAL", ValueFormat(), numeric=True)
    sql = dict(p._pass_b_stats("x", 0, "VARCHAR", decimal, p._levels()))["non_finite"]
    assert "isinf(__x0)" in sql and "TRY_CAST(__t0 AS DOUBLE)" not in sql
    integer = p.TypeDecision("integer", "BIGINT", ValueFormat(), numeric=True)
    sql = dict(p._pass_b_stats("n", 0, "VARCHAR", integer, p._levels()))["non_finite"]
    assert "CASE WHEN __x0 IS NULL THEN TRY_CAST(__t0 AS DOUBLE) END" in sql


@pytest.mark.parametrize("grouped_min_rows", [0, 10**12])
def test_outlier_scan_skipped_only_when_the_range_is_inside_the_fences(
    monkeypatch: pytest.MonkeyPatch, grouped_min_rows: int
) -> None:
    """A column whose full-data min and max (pass B) lie inside the sample's fences has no
    outlier, so its counting scan is skipped; the outliers found must equal those of the
    scan on every column."""
    monkeypatch.setattr(p, "GROUPED_MIN_ROWS", grouped_min_rows)
    con = duckdb.connect(config={"preserve_insertion_order": True})
    con.execute("""CREATE TABLE t AS SELECT
      CAST(i % 1000 AS VARCHAR) || '.5' AS calm,
      CASE WHEN i = 77 THEN '250000.5' WHEN i = 78 THEN '-90000' ELSE CAST(i % 1000 AS VARCHAR) || '.5' END AS wild,
      CAST(CASE WHEN i = 5 THEN 99999 ELSE i % 100 END AS VARCHAR) AS qty,
      CASE WHEN i = 9 THEN 'oops' ELSE CAST(i % 100 AS VARCHAR) END AS patchy
      FROM range(60000) r(i)""")
    within = p._within

    class Spy:
        def __init__(self) -> None:
            self.counts = 0

        def execute(self, sql: str, *args: object) -> duckdb.DuckDBPyConnection:
            self.counts += sql.count(") FILTER (__o")  # columns counted by outlier scans
            return con.execute(sql, *args)

    skipping_spy, counting_spy = Spy(), Spy()
    skipping = p.profile_table(skipping_spy, "t")  # type: ignore[arg-type]
    monkeypatch.setattr(p, "_within", lambda column, fence: False)
    counting = p.profile_table(counting_spy, "t")  # type: ignore[arg-type]
    assert skipping.outliers == counting.outliers
    assert {"wild", "qty"} <= set(skipping.outliers) and "calm" not in skipping.outliers
    assert skipping_spy.counts < counting_spy.counts
    cols = {c.name: c for c in skipping.columns}
    assert cols["patchy"].unparseable_count == 1
    assert within(cols["calm"], (-5000.0, 5000.0)) and not within(cols["calm"], (-5000.0, 999.5))
    assert not within(cols["patchy"], (-5000.0, 5000.0))  # an unparsed value may lie anywhere
