"""Issue 27, finding 8 (the gate's part): a statement the gate cannot check is refused with a
clear reason, never passed to the model as an exception's text. `ROWS FROM (...)` crashed the
table check with an AttributeError; deep nesting raised RecursionError in sqlglot; a few
thousand UNIONs kept the checker busy for 90 s before crashing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dia_assets.platform.sql import safety
from dia_assets.platform.sql.gate import PRIVACY_MODES, check_privacy
from dia_assets.platform.sql.safety import SQLRefused, check_sql
from tests.security.conftest import pg  # noqa: F401 - pytest fixture
from tests.security.harness import probe, run_agent, submit

SCHEMA = {
    "staff": {"badge": "VARCHAR", "role": "VARCHAR", "department_code": "VARCHAR", "hourly_rate": "DECIMAL"},
    "shifts": {"shift_id": "INT", "department_code": "VARCHAR", "shift_date": "DATE", "status": "VARCHAR"},
}
DIALECTS = ("duckdb", "postgres", "sqlite")
PYTHON_ERRORS = re.compile(
    r"\b(?:AttributeError|TypeError|KeyError|IndexError|RecursionError|AssertionError|NameError|"
    r"UnboundLocalError|StopIteration|NotImplementedError|OptimizeError|ParseError|TokenError|"
    r"UnsupportedError|NoneType)\b")
UNCHECKED = "could not check this statement"

# Constructs found by fuzzing the gate: each must be checked or refused, in every dialect.
ODD = [
    "SELECT * FROM ROWS FROM (generate_series(1,3))",
    "SELECT * FROM ROWS FROM (generate_series(1,3), generate_series(1,4)) AS t(a,b)",
    "SELECT * FROM ROWS FROM (generate_series(1,3)) WITH ORDINALITY",
    "SELECT * FROM LATERAL ROWS FROM (generate_series(1,2))",
    "SELECT * FROM staff CROSS JOIN LATERAL ROWS FROM (generate_series(1,2)) r",
    "SELECT * FROM generate_series(1,3) WITH ORDINALITY AS t(a, n)",
    "SELECT * FROM unnest(ARRAY[1,2]) WITH ORDINALITY",
    "SELECT * FROM staff, LATERAL (SELECT badge) x",
    "SELECT * FROM staff, LATERAL generate_series(1, 3) g",
    "SELECT * FROM staff TABLESAMPLE SYSTEM (10)",
    "SELECT * FROM staff TABLESAMPLE BERNOULLI (10) REPEATABLE (1)",
    "SELECT * FROM staff USING SAMPLE 10%",
    "SELECT * FROM (VALUES (1), (2)) v(x)",
    "VALUES (1), (2)",
    "SELECT * FROM VALUES (1)",
    "TABLE staff",
    "SELECT EXISTS (TABLE staff)",
    "SELECT x'FF', b'101', e'\\x41', U&'\\0041', 1e999, .5e-3, 0x1F, 1_000",
    "SELECT $1, ?, :name, @x",
    "SELECT {'a': 1}, [1,2,3][1], ARRAY[1,2][1:2], (1,2), ROW(1,2)",
    "SELECT * FROM staff PIVOT (COUNT(*) FOR role IN ('a'))",
    "PIVOT staff ON role USING COUNT(*)",
    "UNPIVOT staff ON role INTO NAME k VALUE v",
    "FROM staff SELECT badge",
    "SELECT COLUMNS('.*') FROM staff",
    "SELECT * EXCLUDE (badge) FROM staff",
    "SELECT staff FROM staff",
    "SELECT (staff).badge FROM staff",
    "SELECT (s.*)::text FROM staff s",
    "SELECT * FROM staff POSITIONAL JOIN shifts",
    "SELECT * FROM staff ASOF JOIN shifts USING (department_code)",
    "SELECT * FROM staff MATCH_RECOGNIZE (ORDER BY badge PATTERN (a) DEFINE a AS true)",
    "SELECT JSON_VALUE('{}', '$.a' RETURNING int)",
    "SELECT * FROM json_table('[]', '$[*]' COLUMNS (x int PATH '$'))",
    "SELECT 1 OPERATOR(pg_catalog.+) 2",
    "SELECT CAST(1 AS a.b.c.d)",
    "SELECT 1::\"\"",
    "SELECT a.b.c.d.e FROM staff",
    "SELECT * FROM a.b.c.d",
    "SELECT * FROM \"\"",
    "SELECT \"\" FROM staff",
    "SELECT COUNT(*) FROM staff s(a, b, c, d, e, f, g)",
    "SELECT * FROM staff ORDER BY 99",
    "SELECT array_agg(badge) FILTER (WHERE true) WITHIN GROUP (ORDER BY badge) FROM staff",
    "SELECT 1 FROM \x00",
    "SELECT \ud800",
    "SELECT $$unterminated",
    "SELECT 'unterminated",
    "SELECT 1::",
    "(",
    "",
    ";",
    "SELECT",
]


def _deep(n: int) -> list[str]:
    return [
        "SELECT COUNT(*) AS n FROM staff WHERE " + " OR ".join(["badge = 'x'"] * n),
        "SELECT " + "(" * n + "1" + ")" * n + " AS n",
        " UNION ALL ".join(["SELECT 1 AS n"] * n),
        "SELECT " + "abs(" * n + "1" + ")" * n + " AS n",
        "SELECT " + "(SELECT " * n + "1" + ")" * n + " AS n",
        "SELECT COUNT(*) AS n FROM " + "(SELECT * FROM " * n + "staff" + ") x" * n,
        "SELECT " + "CASE WHEN true THEN " * n + "1" + " END" * n + " AS n",
        "SELECT " + "NOT " * n + "true AS n",
        "SELECT " + "CAST(" * n + "1" + " AS int)" * n + " AS n",
        "SELECT " + "ARRAY[" * n + "1" + "]" * n + " AS n",
    ]


HOSTILE = [
    *_deep(5000),
    " UNION ALL ".join(["SELECT 1 AS n"] * 5000),  # 90 s in the checker before this round
    "SELECT " + ", ".join(str(i) for i in range(30_000)),
    "SELECT '" + "x" * 200_000 + "' AS n",
]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("sql", ODD)
def test_odd_constructs_are_checked_or_refused(dialect: str, sql: str) -> None:
    for mode in PRIVACY_MODES:
        try:
            checked = check_sql(sql, dialect, SCHEMA)
            check_privacy(checked.qualified if checked.qualified is not None else checked.tree, mode)
        except SQLRefused as err:
            assert not PYTHON_ERRORS.search(str(err)), str(err)


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("index", range(len(HOSTILE)))
def test_deep_and_huge_statements_are_refused_with_a_reason(dialect: str, index: int) -> None:
    with pytest.raises(SQLRefused) as err:
        check_sql(HOSTILE[index], dialect, SCHEMA)
    message = str(err.value)
    assert message.startswith(f"refused: {UNCHECKED} (") or err.value.signature == "parse_error", message[:300]
    assert not PYTHON_ERRORS.search(message), message[:300]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_limits_leave_room_for_real_queries(dialect: str) -> None:
    """Long IN lists, a hundred ORs, fifty CTEs and a dozen nested subqueries still pass."""
    values = ", ".join(f"'B{i}'" for i in range(2000))
    check_sql(f"SELECT COUNT(*) FROM staff WHERE badge IN ({values})", dialect, SCHEMA)
    check_sql("SELECT COUNT(*) FROM staff WHERE " + " OR ".join(f"badge = 'B{i}'" for i in range(100)),
              dialect, SCHEMA)
    ctes = ", ".join(f"c{i} AS (SELECT COUNT(*) AS n FROM {'staff' if i == 0 else f'c{i - 1}'})" for i in range(50))
    check_sql(f"WITH {ctes} SELECT n FROM c49", dialect, SCHEMA)
    check_sql("SELECT COUNT(*) FROM " + "(SELECT * FROM " * 12 + "staff" + ") x" * 12, dialect, SCHEMA)


def test_an_unexpected_failure_inside_the_gate_is_a_refusal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever sqlglot raises next, the model gets a refusal, not the exception."""
    def broken(*args: object, **kwargs: object) -> None:
        raise AttributeError("'NoneType' object has no attribute 'sql'")

    monkeypatch.setattr(safety, "qualify", broken)
    with pytest.raises(SQLRefused) as err:
        check_sql("SELECT role FROM staff", "duckdb", SCHEMA)
    assert err.value.signature == "unchecked" and not PYTHON_ERRORS.search(str(err.value))
    tree = safety.parse_one_statement("SELECT COUNT(*) FROM staff", "duckdb")
    monkeypatch.setattr("dia_assets.platform.sql.gate._value_free", broken)
    with pytest.raises(SQLRefused, match=UNCHECKED):
        check_privacy(tree, "aggregates")


def test_an_unexpected_failure_never_reaches_the_model(duck: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise AttributeError("'NoneType' object has no attribute 'sql'")

    monkeypatch.setattr(safety, "qualify", broken)
    for steps, tool in ((probe("SELECT COUNT(*) AS n FROM staff"), "probe"),
                        (submit("SELECT COUNT(*) AS n FROM staff"), "submit")):
        out = run_agent(duck, steps)
        assert out.refused(tool) and UNCHECKED in out.tool(tool)["result"]
        assert not PYTHON_ERRORS.search(out.script.sent())


@pytest.mark.parametrize("sql", [HOSTILE[0], HOSTILE[1], HOSTILE[10], _deep(190)[4], "SELECT * FROM ROWS FROM (generate_series(1,3))"])
@pytest.mark.parametrize("tool", ["probe", "submit"])
def test_hostile_statements_through_the_agent(duck: Path, sql: str, tool: str) -> None:
    """The run goes on, the tool result says why, and no Python error text is sent."""
    out = run_agent(duck, (probe if tool == "probe" else submit)(sql))
    assert out.stopped(tool) and out.status != "answered", out.tool(tool)["result"][:300]
    assert not PYTHON_ERRORS.search(out.script.sent())


def test_rows_from_runs_on_postgres(pg: str) -> None:  # noqa: F811
    """The crash of the issue: ROWS FROM is a number spine like generate_series alone."""
    out = run_agent(pg, probe("SELECT * FROM ROWS FROM (generate_series(1,3)) WITH ORDINALITY AS t(n, i)"))
    result = out.tool("probe")["result"]
    assert '"rows": [[1, 1], [2, 2], [3, 3]]' in result, result


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("sql", [
    "SELECT * FROM ROWS FROM (pg_ls_dir('.'))",
    "SELECT * FROM ROWS FROM (generate_series(1,2), pg_ls_dir('.'))",
    "SELECT * FROM ROWS FROM (read_csv('/etc/passwd'))",
    "SELECT * FROM ROWS FROM (staging.secrets)",
    "SELECT * FROM ROWS FROM (generate_series(1,2)::regclass)",
])
def test_rows_from_checks_every_function_inside(dialect: str, sql: str) -> None:
    with pytest.raises(SQLRefused) as err:
        check_sql(sql, dialect, SCHEMA)
    assert err.value.signature != "unchecked"


@pytest.mark.parametrize("mode", ["aggregates", "schema-only"])
@pytest.mark.parametrize("sql", [
    "SELECT (staff).hourly_rate FROM staff",
    "SELECT (s).hourly_rate FROM staff s",
    "SELECT staff FROM staff",
    "SELECT COLUMNS('hourly_rate') FROM staff",
])
def test_whole_row_and_columns_references_are_row_level_values(mode: str, sql: str) -> None:
    """Found by the same fuzz: a whole-row reference or DuckDB's COLUMNS() carries every row's
    values, yet is not a plain column; the privacy check refuses them like one."""
    with pytest.raises(SQLRefused, match="privacy mode"):
        check_privacy(check_sql(sql, "duckdb", SCHEMA).qualified, mode)
