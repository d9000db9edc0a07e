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


def _class_counts(values: list[str]) -> dict[str, object]:
    from dia_assets.agents.interpreter import semantic

    con = duckdb.connect()
    con.execute("CREATE TABLE vals AS SELECT unnest(?) AS v, 1 AS n", [values])
    stats = semantic.sample_class_sql()
    datelike = semantic.sql_str(semantic.PATTERNS["datelike"])
    row = con.execute(
        f"WITH d AS (SELECT v, n, regexp_full_match(v, {datelike}) AS dl FROM vals) "
        f"SELECT {', '.join(sql for _, sql in stats)} FROM d"
    ).fetchone()
    return {k: sorted(x) if isinstance(x, list) else x for (k, _), x in zip(stats, row, strict=True)}


def test_class_counts_are_the_same_without_the_cheap_gates(monkeypatch):
    """Each regular expression and date format runs only where a required character is
    present; without those gates every count must be the same."""
    import random
    from datetime import datetime, timedelta

    from dia_assets.agents.interpreter import semantic

    rnd = random.Random(5)
    formats = [*semantic.DATE_FORMATS, *semantic.TIMESTAMP_FORMATS, "%Y-%m-%dT%H:%M:%SZ", "%H:%M", "%Y%m%d"]
    values = {"1,234.50", "1.234,5", "12 %", "$1,234.50", "99 EUR", "1e5", "-2.5E-3", "user@x.org", "www.a.b",
              "http://x.y/z", "550e8400-e29b-41d4-a716-446655440000", '{"a": 1}', "[1]", "yes", "F", "0123",
              "+1 (555) 123-4567", "AB-1234", "12:30", "Mar 4, 2021", "4 March 2021", "04-Mar-21", "1,5"}
    for _ in range(3000):
        text = (datetime(1990, 1, 1) + timedelta(seconds=rnd.randint(0, 10**9))).strftime(rnd.choice(formats))
        roll = rnd.random()
        if roll < 0.3:  # a separator changed, doubled or dropped
            sep = rnd.choice([c for c in "-/.: ,T" if c in text] or [" "])
            text = text.replace(sep, rnd.choice(["-", "/", ".", ":", " ", ",", "T", "\t", "  ", ""]), 1)
        elif roll < 0.45:
            text += rnd.choice([":", " x", ",", "Z", "+01:00", "\t"])
        elif roll < 0.55:
            text = text.lower()
        values.add(text.strip(" ") or "0")
    gated = _class_counts(sorted(values))
    monkeypatch.setattr(semantic, "_pattern_gates", lambda _value: {})
    monkeypatch.setattr(semantic, "_format_gate", lambda _value, _fmt: "true")
    assert _class_counts(sorted(values)) == gated
    assert all(gated[f"date{i}"] for i in range(len(semantic.DATE_FORMATS)))
    assert all(gated[f"ts{i}"] for i in range(len(semantic.TIMESTAMP_FORMATS)))
    assert all(gated[k] for k in ("exp", "dec_thou", "dec_comma", "currency", "percent", "time", "ts_iso",
                                  "email", "url", "uuid", "bool", "json", "currency_comma_decimal"))
