"""Type inference on text columns: the narrowest type that keeps every value."""

from __future__ import annotations

import duckdb
import pytest

from dia_assets.agents.interpreter.profile import profile_table


def _profile(values: list[str | None], name: str = "col"):
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t ({name} VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?)", [[v] for v in values])
    return profile_table(con, "t").columns[0]


@pytest.mark.parametrize(
    ("values", "semantic", "sql_type"),
    [
        (["1", "2", "30"], "integer", "INTEGER"),
        (["1", "9999999999"], "integer", "BIGINT"),
        (["02134", "10001", "02134"], "categorical", "VARCHAR"),
        (["1.50", "2.25", "3"], "decimal", "DECIMAL(18,2)"),
        (["1,5", "2,25"], "decimal", "DECIMAL(18,2)"),
        (["$1,234.50", "$99.00"], "currency", "DECIMAL(18,2)"),
        (["12.5%", "3%"], "percentage", "DECIMAL(18,1)"),
        (["2024-01-31", "2023-12-01"], "date", "DATE"),
        (["2024-01-31 10:00:00", "2024-02-01 11:30:00"], "timestamp", "TIMESTAMP"),
        (["07:00", "23:30"], "time", "TIME"),
        (["true", "false", "TRUE"], "boolean", "BOOLEAN"),
        (["a@x.org", "b@y.com"], "email", "VARCHAR"),
        (["https://a.org/x", "http://b.com"], "url", "VARCHAR"),
        (['{"a": 1}', "[1, 2]"], "json", "VARCHAR"),
        (["550e8400-e29b-41d4-a716-446655440000", "6fa459ea-ee8a-3ca4-894e-db77e160355e"], "id", "VARCHAR"),
    ],
)
def test_types(values, semantic, sql_type):
    col = _profile(values)
    assert (col.semantic_type, col.inferred_type) == (semantic, sql_type)


def test_names_add_meaning():
    assert _profile(["02134", "10001"], "zip").semantic_type == "postal_code"
    assert _profile(["555-1234", "(617) 555-0101"], "phone").semantic_type == "phone"
    assert _profile(["1", "2"], "customer_id").semantic_type == "id"


def test_a_few_bad_values_are_unparseable_not_a_type_change():
    values = [f"2024-01-{d:02d}" for d in range(1, 29)] * 2 + ["soon"]
    col = _profile(values)
    assert col.inferred_type == "DATE" and col.unparseable_count == 1 and col.unparseable_examples == ["soon"]


def test_day_first_dates_are_told_apart_from_month_first():
    col = _profile(["31/01/2024", "01/02/2024", "15/03/2024"])
    assert col.value_format.date_formats == ["%d/%m/%Y"]


def test_null_blank_and_token_counts_are_separate():
    col = _profile([None, "", "  ", "N/A", "null", "x", "y"])
    assert (col.null_count, col.blank_count, col.null_token_count) == (1, 2, 2)
    assert col.null_fraction == pytest.approx(5 / 7, abs=1e-6)
