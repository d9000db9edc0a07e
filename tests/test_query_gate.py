"""The gate's allow-list: what legitimate analytical SQL needs passes, names are normalised,
and the statement that runs is the checked one."""

from __future__ import annotations

import pytest
import sqlglot

from dia_assets.agents.query.safety import SQLRefused, check_functions, check_sql, normalize_name

TYPICAL = {
    "duckdb": "SELECT median(x), quantile_cont(x, 0.5), arg_max(a, x), list(x), array_agg(x), "
              "date_diff('day', d, d), datediff('day', d, d), epoch(d), year(d), dayofweek(d), last_day(d), "
              "make_date(2020, 1, 1), strptime(s, '%Y'), regexp_extract(s, 'x'), string_split(s, ','), "
              "split_part(s, ',', 1), contains(s, 'x'), starts_with(s, 'x'), len(s), ifnull(x, 0), "
              "greatest(1, 2), round(x, 2), date_trunc('month', d), strftime(d, '%Y'), count_if(x > 1), "
              "bool_or(x > 1), first(x), any_value(x), lag(x) OVER (), row_number() OVER (), nullif(x, 0), "
              "concat(s, s), left(s, 2), try_cast(s AS INT), typeof(x), age(d, d), date_part('year', d), "
              "now() FROM t",
    "postgres": "SELECT to_char(d, 'YYYY'), extract(year FROM d), date_part('year', d), date_trunc('month', d), "
                "age(d), now(), current_date, string_agg(s, ','), array_agg(x), round(x::numeric, 2), "
                "percentile_cont(0.5) WITHIN GROUP (ORDER BY x), split_part(s, ',', 1), position('a' IN s), "
                "substring(s FROM 1 FOR 2), initcap(s), regexp_replace(s, 'a', 'b'), to_date(s, 'YYYY'), "
                "make_date(2020, 1, 1), count(*) FILTER (WHERE x > 1), dense_rank() OVER (ORDER BY x), "
                "EXTRACT(EPOCH FROM d), lpad(s, 3, '0'), concat_ws(',', s, s), mod(x, 2), stddev(x), md5(s) FROM t",
    "sqlite": "SELECT strftime('%Y', d), julianday(d), date(d), datetime(d), ifnull(x, 0), substr(s, 1, 2), "
              "instr(s, 'a'), group_concat(s), total(x), printf('%d', x), iif(x > 1, 1, 0), time(d), "
              "unixepoch(d), hex(s), typeof(x) FROM t",
}


@pytest.mark.parametrize("dialect", sorted(TYPICAL))
def test_typical_analytical_functions_pass(dialect: str) -> None:
    check_functions(sqlglot.parse_one(TYPICAL[dialect], read=dialect), dialect)


@pytest.mark.parametrize(("dialect", "sql"), [
    ("postgres", 'SELECT "pg_catalog"."pg_read_file"(\'/etc/passwd\')'),
    ("postgres", "SELECT pg_catalog.pg_ls_dir('.')"),
    ("postgres", "SELECT public.upper('x')"),
    ("duckdb", 'SELECT "current_setting"(\'threads\')'),
    ("duckdb", "SELECT version()"),
    ("duckdb", "SELECT current_database()"),
    ("sqlite", "SELECT load_extension('x')"),
])
def test_names_are_normalised_before_the_allow_list(dialect: str, sql: str) -> None:
    with pytest.raises(SQLRefused):
        check_functions(sqlglot.parse_one(sql, read=dialect), dialect)


def test_normalize_name_folds_quotes_case_and_look_alikes() -> None:
    assert normalize_name('"Current_Setting"') == "current_setting"
    assert normalize_name("ｃｕｒｒｅｎｔ_ｓｅｔｔｉｎｇ") == "current_setting"


def test_what_runs_is_the_regenerated_statement() -> None:
    checked = check_sql("SELECT role /* a comment; DROP TABLE staff */ FROM staff -- bye",
                        "duckdb", {"staff": {"role": "VARCHAR"}})
    assert checked.text == "SELECT role FROM staff"


def test_writes_report_their_target() -> None:
    schema = {"staff": {"badge": "VARCHAR"}, "shifts": {"shift_id": "INT"}}
    assert check_sql("DELETE FROM staff WHERE badge = 'x'", "duckdb", schema, allow_write=True).written_tables == {"staff"}
    assert check_sql("INSERT INTO shifts (shift_id) SELECT 1", "duckdb", schema, allow_write=True).written_tables == {"shifts"}
    assert check_sql("CREATE TABLE t2 AS SELECT badge FROM staff", "duckdb", schema, allow_write=True).written_tables == {"t2"}
    with pytest.raises(SQLRefused, match="nested"):
        check_sql("INSERT INTO shifts WITH d AS (DELETE FROM staff RETURNING 1) SELECT 1 FROM d", "postgres",
                  schema, allow_write=True)
