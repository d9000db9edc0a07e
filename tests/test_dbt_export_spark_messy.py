"""`dia dbt export` of a Spark warehouse, continued from test_dbt_export_spark.py: the messy
file (refused, kept and ragged rows, '{%' in the data, a split wide table) exported and built by
dbt-spark gives DIA's rows, every kind of reject included; and the typed parse rendered for Spark
(spark_render) is compared with DuckDB's on a corpus of awkward texts: equal but for the
differences it names."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

import duckdb
import pytest

from dia_assets.agents.schema_creator.spark_render import to_spark
from dia_assets.agents.value_parsing import parse_expression
from dia_assets.contracts.interpretation import ValueFormat
from dia_assets.platform.naming import sql_str
from dia_assets.platform.warehouse.spark import end_session, new_session, parse_target
from tests.dbt_fixtures import build_messy
from tests.spark_fixtures import require_spark, spark_target
from tests.test_dbt_export_spark import export_and_build, parquet_files, same_tables

pytestmark = [pytest.mark.spark, pytest.mark.heavy]


@pytest.fixture(scope="module")
def messy(tmp_path_factory):
    """The messy file (refused, kept and ragged rows, '{%' in the data, a split wide table)."""
    require_spark()
    tmp = tmp_path_factory.mktemp("dbt_spark_messy")
    build_messy(tmp, spark_target(tmp / "root"))
    return export_and_build(tmp)


def test_dbt_spark_reproduces_every_kind_of_reject(messy):
    same_tables(messy)
    visits = messy["root"] / "_dbt" / "warehouse" / "dbt_rejects.db" / "visits"
    kinds = duckdb.execute(f"SELECT _raw_line IS NOT NULL, _row_kept, count(*) FROM {parquet_files(visits)} "
                           "GROUP BY 1, 2 ORDER BY 1, 2").fetchall()
    # 2 refused rows, 1 kept with amount NULL, 2 ragged lines from DIA's reject table
    assert kinds == [(False, False, 2), (False, True, 1), (True, False, 2)]
    assert all(s in ("pass", "success") for s in messy["statuses"].values()), messy["statuses"]


# ---------------------------------------------------------------- the parse, engine against engine

CORPUS = {
    "INTEGER": ["42", "2.5", "-2.5", "1e3", "+5", "007", ".5", "1.", "abc", "", "99999999999", "1,5", "inf",
                " 5 ", "1_000", "0x10"],
    "BIGINT": ["9007199254740993", "12.49", "2.4999999999999"],
    "TINYINT": ["127", "128", "-128.4", "-129", "1e2"],
    "SMALLINT": ["32767", "32768", "-3.5"],
    "DECIMAL(18,2)": ["1.235", "-1.245", "1e-3", "12", "x1", "Infinity", "NaN", "12345678901234567890"],
    "DOUBLE": ["1e3", "-0.5", ".5", "inf", "-Infinity", "NaN", "1,5", "abc", "1d", "1f", "0x10"],
    "BOOLEAN": ["t", "F", "1", "0", "yes", "No", "y", "n", "TRUE", " true", "on", "2"],
    "DATE": ["2024-01-05", "2024-1-5", "2024-02-30", "2024-01-05 10:00", "2024-01-05T10:00:00",
             "20240105", "05-01-2024", "Jan 5 2024", "2024/01/05", "epoch", "2024-01-05 junk"],
    "TIMESTAMP": ["2024-01-05 10:00:01", "2024-01-05T07:05", "2024-01-05", "2024-01-05 25:00", "yesterday",
                  "2024-01-05 10:00:01.123456"],
    "TIMESTAMPTZ": ["2024-01-05T10:00:00Z", "2024-01-05 10:00:00+01", "2024-01-05 10:00", "2024-01-05",
                    "2024-01-05 10:00:00+01:30"],
    "TIME": ["10:00", "7:05:03.5", "10:00:00", "noon", "25:00", "2024-01-05 10:00", "07:05:03.1234567", "7:5",
             "24:00:00", "24:00:01", "23:59:60", "10:00:00.000100", " 10:00"],
}
FORMATS = {
    "%d %b %Y": ["05 jan 2024", "5 JAN 2024", "30 feb 2024", "05 January 2024", "05  jan 2024", "05 jan2024"],
    "%d %B %Y": ["05 January 2024", "5 march 2024", "05 Jan 2024"],
    "%d-%b-%y": ["05-jan-69", "05-jan-68", "05-jan-5"],
    "%d/%m/%Y": ["5/1/2024", "05/01/24", "31/04/2024", "005/01/2024", "05/01/2024x"],
    "%b %d, %Y": ["Jan 5, 2024", "Jan  5,2024"],
    "%Y-%m-%d %H:%M:%S": ["2024-01-05 7:5:3", "2024-01-05 24:00:00", "2024-01-05 10:60:00",
                          "2024-01-05 10:00:60", "2024-01-05 10:00:01.5"],
    "%d.%m.%Y %H:%M": ["5.1.2024 10:30", "5.1.2024"],
}
# what DuckDB's cast reads and these renderings do not (spark_render, docs/dbt.md): DuckDB's
# integer literals with underscores or in hexadecimal, its dates with slashes and 'epoch', a
# timestamp's time of day as a TIME
KNOWN = {("INTEGER", "1_000"), ("INTEGER", "0x10"), ("DATE", "2024/01/05"), ("DATE", "epoch"),
         ("TIME", "2024-01-05 10:00")}


def _cases() -> list[tuple[str, str | None, list[str]]]:
    return [*((t, None, values) for t, values in CORPUS.items()),
            *((t, f, values) for f, values in FORMATS.items()
              for t in (("TIMESTAMP", "TIMESTAMPTZ") if "%H" in f else ("DATE",)))]


def _norm(value: object) -> object:
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.replace(tzinfo=None) - value.utcoffset()
    if isinstance(value, float) and value != value:
        return "nan"
    if isinstance(value, float | Decimal | int | date) or value is None:
        return value
    return str(value)


def test_rendered_parse_matches_duckdb_but_for_named_forms(tmp_path):
    """Each text parsed by DuckDB's expression and by its Spark rendering, in a Spark session
    with ANSI mode on (Spark 4's default; dbt-spark turns it off: try_cast means the same in
    both). Both run in UTC, as DIA's load and the export's profile do."""
    require_spark()
    target = parse_target(spark_target(tmp_path))
    spark = new_session(target)
    duck = duckdb.connect()
    duck.execute("SET TimeZone = 'UTC'")
    differ = set()
    try:
        spark.conf.set("spark.sql.ansi.enabled", "true")
        for sql_type, fmt, texts in _cases():
            rows = ", ".join(f"({i}, {sql_str(v)})" for i, v in enumerate(texts))
            duck.execute("CREATE OR REPLACE TABLE corpus (i INTEGER, v VARCHAR)")
            duck.execute(f"INSERT INTO corpus VALUES {rows}")
            spark.createDataFrame(list(enumerate(texts)), "i INT, v STRING").createOrReplaceTempView("corpus")
            expr = parse_expression("v", sql_type, ValueFormat(date_formats=[fmt] if fmt else []))
            sql = f"SELECT {expr} FROM corpus ORDER BY i"
            ours = [r[0] for r in spark.sql(to_spark(sql)).collect()]
            if sql_type == "TIME":  # DIA's Spark warehouse holds a TIME as DuckDB's text of it
                sql = f"SELECT CAST({expr} AS VARCHAR) FROM corpus ORDER BY i"
            theirs = [r[0] for r in duck.execute(sql).fetchall()]
            differ |= {(f"{sql_type} {fmt or ''}".strip(), v) for v, a, b in zip(texts, ours, theirs, strict=True)
                       if _norm(a) != _norm(b)}
    finally:
        end_session(target, spark)
    assert differ == KNOWN
