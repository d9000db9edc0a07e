"""Issue 27, item 2: in `aggregates` and `schema-only`, engine errors quoted the offending
value to the model (`CAST(first_name AS INTEGER)` on `O'QUOKKA`, DuckDB and PostgreSQL, and
PostgreSQL's `Key (badge)=(...)` details). Each probe runs through the agent's own tools on a
real engine; the redaction rule itself is checked on the messages the engines print."""

from __future__ import annotations

from pathlib import Path

import duckdb
import psycopg
import pytest

from dia_assets.platform.sql.redaction import (
    redact_error,
    redact_message,
    schema_words,
    statement_words,
)
from tests.security.conftest import duck, pg, secret_file  # noqa: F401 - pytest fixtures
from tests.security.harness import post_condition, probe, run_agent, submit

PLANTED = ("QUOKKA", "Planted-7731")
CAST = "SELECT COUNT(*) AS n FROM staff WHERE badge = 'QK0042' AND CAST(first_name AS INTEGER) > 0"
PLANT = "INSERT INTO staff VALUES ('QK0042', 'O''QUOKKA', 'say \"hi\" x', 'Planted-7731', 'ICU', 10.0)"


@pytest.fixture
def quokka_duck(duck: Path) -> Path:  # noqa: F811
    con = duckdb.connect(str(duck))
    con.execute(PLANT)
    con.close()
    return duck


@pytest.fixture(scope="module")
def quokka_pg(pg: str) -> str:  # noqa: F811
    with psycopg.connect(pg, autocommit=True) as con:
        con.execute(PLANT)
    return pg


def _leaks(text: str) -> list[str]:
    return [p for p in PLANTED if p in text]


@pytest.mark.parametrize("mode", ["schema-only", "aggregates"])
def test_duckdb_cast_error_names_the_column_never_the_value(quokka_duck: Path, mode: str) -> None:
    out = run_agent(quokka_duck, probe(CAST), privacy=mode)
    result = out.tool("probe")["result"]
    assert "Could not convert string '…' to INT32 when casting from source column first_name" in result
    assert _leaks(out.script.sent()) == []


@pytest.mark.parametrize("mode", ["schema-only", "aggregates"])
def test_postgres_cast_error_never_quotes_the_value(quokka_pg: str, mode: str) -> None:
    out = run_agent(quokka_pg, probe(CAST), privacy=mode)
    result = out.tool("probe")["result"]
    assert 'invalid input syntax for type integer: \\"…\\"' in result
    assert _leaks(out.script.sent()) == []


def test_samples_mode_still_shows_the_engine_message(quokka_duck: Path) -> None:
    """The control: the value is in the raw message, so the redaction above is what hid it."""
    out = run_agent(quokka_duck, probe(CAST), privacy="samples")
    assert "QUOKKA" in out.tool("probe")["result"]


@pytest.mark.parametrize("mode", ["schema-only", "aggregates"])
def test_failed_submission_is_redacted(quokka_pg: str, mode: str) -> None:
    out = run_agent(quokka_pg, submit("SELECT CAST(first_name AS INTEGER) AS n FROM staff"), privacy=mode)
    result = out.tool("submit")["result"]
    assert "execution_error:InvalidTextRepresentation" in result  # the signature keeps the engine's class
    assert _leaks(out.script.sent()) == []


@pytest.mark.parametrize("mode", ["schema-only", "aggregates"])
def test_postgres_duplicate_key_detail_is_dropped(quokka_pg: str, mode: str) -> None:
    out = run_agent(quokka_pg, post_condition("SELECT COUNT(*) > 0 FROM staff",
                                              "INSERT INTO staff SELECT * FROM staff WHERE role = 'Planted-7731'",
                                              "staff"), privacy=mode)
    result = out.tool("submit")["result"]
    assert "duplicate key value violates unique constraint" in result and "Key (" not in result
    assert "QK0042" not in out.script.sent() and "QUOKKA" not in out.script.sent()  # the duplicated key


# -- the rule, on the engines' own messages ------------------------------------------------------


SCHEMA = {"staff": {"badge": "VARCHAR", "first_name": "VARCHAR", "employee_no": "INTEGER"}}


def _redact(message: str, sql: str, dialect: str = "duckdb") -> str:
    return redact_message(message, statement_words(sql, dialect) | schema_words(SCHEMA))


@pytest.mark.parametrize(("message", "sql", "dialect", "expected"), [
    ("Conversion Error: Could not convert string 'O'QUOKKA' to INT32 when casting from source column first_name"
     "\n\nLINE 1: SELECT CAST(first_name AS INTEGER) FROM staff\n               ^^^^",
     "SELECT CAST(first_name AS INTEGER) FROM staff", "duckdb",
     "Conversion Error: Could not convert string '…' to INT32 when casting from source column first_name"),
    ('invalid input syntax for type integer: "say "hi" x"', "SELECT CAST(first_name AS INTEGER) FROM staff",
     "postgres", 'invalid input syntax for type integer: "…"'),
    ("Out of Range Error: Overflow in multiplication of INT32 (804101 * 1000000000)!",
     "SELECT employee_no * 1000000000 FROM staff", "duckdb",
     "Out of Range Error: Overflow in multiplication of INT32 (… * 1000000000)!"),
    ("Conversion Error: Type INT32 with value 7123457 can't be cast because the value is out of range for the "
     "destination type INT8", "SELECT CAST(employee_no AS TINYINT) FROM staff", "duckdb",
     "Conversion Error: Type INT32 with value … can't be cast because the value is out of range for the "
     "destination type INT8"),
    ('duplicate key value violates unique constraint "staff_pkey"\nDETAIL:  Key (badge)=(QK0042) already exists.',
     "INSERT INTO staff SELECT * FROM staff", "postgres",
     'duplicate key value violates unique constraint "…"'),
    ('null value in column "first_name" of relation "staff" violates not-null constraint\n'
     "DETAIL:  Failing row contains (QK0042, null, Zed).", "INSERT INTO staff (badge) VALUES ('x')", "postgres",
     'null value in column "first_name" of relation "staff" violates not-null constraint'),
    ('column "nme" does not exist\nLINE 1: SELECT nme FROM staff\n               ^\n'
     'HINT:  Perhaps you meant to reference the column "staff.first_name".', "SELECT nme FROM staff", "postgres",
     'column "nme" does not exist'),
    ("Conversion Error: Could not convert string 'first line\nHINT: QUOKKA' to INT32",  # a value with a line break
     "SELECT CAST(first_name AS INTEGER) FROM staff", "duckdb", "Conversion Error: Could not convert string '…"),
    ("Binder Error: No function matches the given name and argument types 'lower(INTEGER)'.",
     "SELECT lower(employee_no) FROM staff", "duckdb",
     "Binder Error: No function matches the given name and argument types 'lower(INTEGER)'."),
    ('Invalid Input Error: Could not parse string "1911-99-99" according to format specifier "%Y-%m-%d"\n1911-99-99\n'
     "     ^", "SELECT strptime(first_name, '%Y-%m-%d') FROM staff", "duckdb",
     'Invalid Input Error: Could not parse string "…"'),
    ("Not implemented Error: Unknown TimeZone 'O'QUOKKA'!", "SELECT timezone(first_name, now()) FROM staff", "duckdb",
     "Not implemented Error: Unknown TimeZone '…'!"),
    ('invalid input syntax for type json\nDETAIL:  Token "QUOKKA" is invalid.\nCONTEXT:  JSON data, line 1: QUOKKA...',
     "SELECT CAST(first_name AS JSON) FROM staff", "postgres", "invalid input syntax for type json"),
])
def test_the_rule_keeps_names_and_failures_and_drops_values(message: str, sql: str, dialect: str,
                                                           expected: str) -> None:
    assert _redact(message, sql, dialect) == expected


def test_postgres_hint_comes_from_the_driver_fields_not_the_text(quokka_pg: str) -> None:
    """A hint is kept only as psycopg's own field; the value's text cannot forge one."""
    with psycopg.connect(quokka_pg) as con, pytest.raises(psycopg.Error) as err:
        con.execute("SELECT CAST('1911-99-99' AS DATE)")
    text = redact_error(err.value, statement_words("SELECT CAST('x' AS DATE)", "postgres"))
    assert text == 'date/time field value out of range: "…"\nHINT:  Perhaps you need a different "…" setting.'
