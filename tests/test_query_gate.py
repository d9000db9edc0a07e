"""The gate's allow-lists: what legitimate analytical SQL needs passes, names are normalised,
types are allowed by list, and the statement that runs is the checked one."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from dia_assets.platform.sql.allowlist import ANONYMOUS, TYPES
from dia_assets.platform.sql.safety import (
    SQLRefused,
    check_functions,
    check_sql,
    check_static,
    check_types,
    normalize_name,
)

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


# -- data types: allowed by list (issue 27, finding 1) -------------------------------------

CATALOG_TYPES = ["regclass", "regcollation", "regconfig", "regdictionary", "regnamespace", "regoper",
                 "regoperator", "regproc", "regprocedure", "regrole", "regtype", "oid", "xid", "xid8", "cid",
                 "tid", "pg_lsn", "pg_snapshot", "txid_snapshot", "aclitem", "oidvector", "int2vector",
                 "name", "record", "anyelement", "cstring", "internal", "void", "refcursor", "pg_node_tree"]
SPELLINGS = ["SELECT 1::{t}", "SELECT CAST(1 AS {t})", "SELECT CAST(1 AS {T})", "SELECT CAST(1 AS pg_catalog.{t})",
             'SELECT CAST(1 AS "{t}")', 'SELECT CAST(1 AS "pg_catalog"."{t}")', "SELECT {t} '1'",
             "SELECT TRY_CAST(1 AS {t})", "SELECT CAST(ARRAY[1] AS {t}[])", "SELECT 1 FROM t WHERE x::{t} IS NULL"]


@pytest.mark.parametrize(("dialect", "spelling"), [
    (dialect, spelling) for dialect in ("postgres", "duckdb", "sqlite") for spelling in SPELLINGS
    if not (dialect == "sqlite" and spelling.endswith("'1'"))  # SQLite: `name '1'` is a column and its alias
])
def test_catalog_types_are_refused_in_every_spelling(dialect: str, spelling: str) -> None:
    for name in CATALOG_TYPES:
        with pytest.raises(SQLRefused):
            check_static(spelling.format(t=name, T=name.upper()), dialect)


@pytest.mark.parametrize("dialect", ["postgres", "duckdb", "sqlite"])
def test_types_are_allowed_by_list_not_refused_by_list(dialect: str) -> None:
    """Every type sqlglot knows is refused unless the dialect's list names it, so a type added
    to sqlglot (or to the engine) is unavailable until someone lists it."""
    for kind in exp.DataType.Type:
        tree = exp.select(exp.Cast(this=exp.Literal.number(1), to=exp.DataType(this=kind)))
        if kind in TYPES[dialect]:
            check_types(tree, dialect)
        else:
            with pytest.raises(SQLRefused, match="is not allowed"):
                check_types(tree, dialect)
    for cls in (exp.ObjectIdentifier, exp.PseudoType):
        with pytest.raises(SQLRefused):
            check_types(exp.select(exp.Cast(this=exp.Literal.number(1), to=cls(this="REGCLASS"))), dialect)


TYPICAL_CASTS = {
    "duckdb": "SELECT CAST(x AS DECIMAL(10, 2)), TRY_CAST(s AS INTEGER), x::DOUBLE, s::VARCHAR, d::DATE, "
              "d::TIMESTAMP, d::TIMESTAMPTZ, x::BIGINT, x::HUGEINT, s::UUID, s::JSON, [1]::INT[], "
              "CAST(s AS STRUCT(a INT)), CAST(s AS MAP(VARCHAR, INT)), INTERVAL '1' DAY, DATE '2026-01-01', "
              "TIMESTAMP '2026-01-01 00:00:00', x::BOOLEAN, s::BLOB FROM t",
    "postgres": "SELECT x::numeric, round(x::numeric, 2), x::float8, x::real, x::int, x::bigint, s::text, "
                "s::varchar(10), d::date, d::timestamp, d::timestamptz, CAST(d AS timestamp with time zone), "
                "s::jsonb, s::json, s::uuid, ARRAY[1]::int[], d::time, INTERVAL '1 day', DATE '2026-01-01', "
                "x::double precision, s::bytea, x::boolean, '[1,2)'::int4range FROM t",
    "sqlite": "SELECT CAST(x AS INTEGER), CAST(x AS REAL), CAST(x AS TEXT), CAST(x AS NUMERIC), "
              "CAST(x AS BLOB), CAST(x AS FLOAT), CAST(x AS VARCHAR(10)), CAST(x AS DATE) FROM t",
}


@pytest.mark.parametrize("dialect", sorted(TYPICAL_CASTS))
def test_typical_casts_pass(dialect: str) -> None:
    check_static(TYPICAL_CASTS[dialect], dialect)


def test_a_listed_type_spelled_by_its_catalog_name_runs_as_the_plain_type() -> None:
    """Normalised before the list, and what runs names the listed type, not the spelling."""
    schema = {"staff": {"hourly_rate": "DECIMAL"}}
    assert check_sql('SELECT 1::"pg_catalog"."INT4"', "postgres", schema).text == "SELECT CAST(1 AS INT)"
    assert check_sql("SELECT CAST(1 AS ｉｎｔ)", "postgres", schema).text == "SELECT CAST(1 AS INT)"
    assert check_sql("SELECT 1.234::pg_catalog.numeric(10, 2)", "postgres", schema).text == \
        "SELECT CAST(1.234 AS DECIMAL(10, 2))"  # the parameters stay
    with pytest.raises(SQLRefused, match="type public.int4"):
        check_sql("SELECT 1::public.int4", "postgres", schema)


def test_types_in_definitions_and_nested_types_are_checked() -> None:
    schema = {"staff": {"badge": "VARCHAR"}}
    check_sql("CREATE TABLE t (x INTEGER, y VARCHAR(10), z DATE)", "postgres", schema, allow_write=True)
    for sql, dialect in [("CREATE TABLE t (x regclass)", "postgres"), ("CREATE TABLE t (x SERIAL)", "postgres"),
                         ("SELECT CAST(badge AS STRUCT(a regclass)) FROM staff", "duckdb"),
                         ("SELECT CAST(badge AS MAP(VARCHAR, oid)) FROM staff", "duckdb"),
                         ("SELECT JSON_VALUE(badge, '$.a' RETURNING regclass) FROM staff", "postgres"),
                         ("SELECT regclass('staff')", "postgres"), ("SELECT oid(1)", "postgres"),
                         ("SELECT pg_typeof(badge) FROM staff", "postgres")]:
        with pytest.raises(SQLRefused):
            check_sql(sql, dialect, schema, allow_write=True)


def test_no_catalog_type_is_callable_as_a_function() -> None:
    """`regclass('x')` is a cast in PostgreSQL's function syntax: none may be vetted."""
    for dialect, names in ANONYMOUS.items():
        assert not [n for n in names if n in CATALOG_TYPES], dialect
    assert "pg_typeof" not in ANONYMOUS["postgres"]  # it returns a regtype


def test_system_columns_only_where_a_table_has_them() -> None:
    schema = {"staff": {"badge": "VARCHAR"}, "shifts": {"shift_id": "INT"}}
    for sql in ["SELECT tableoid FROM staff", 'SELECT "CTID" FROM staff', "SELECT s.xmin FROM staff s",
                "SELECT (s).cmax FROM staff s"]:
        with pytest.raises(SQLRefused, match="system column"):
            check_sql(sql, "postgres", schema)
    with pytest.raises(SQLRefused, match="system column"):  # writes skip qualification, not this
        check_sql("INSERT INTO shifts (shift_id) SELECT xmin FROM staff", "postgres", schema, allow_write=True)
    with pytest.raises(SQLRefused, match="system column"):
        check_sql("SELECT rowid FROM staff", "sqlite", schema)
    check_sql("SELECT oid FROM parts", "postgres", {"parts": {"oid": "INT"}})  # a real column


@pytest.mark.parametrize("dialect", ["snowflake", "bigquery", "mysql", ""])
def test_a_dialect_without_an_allow_list_is_refused_not_vetted_as_duckdb(dialect: str) -> None:
    """No fallback: before the split, an unknown dialect silently got DuckDB's lists, so
    DuckDB's `median(x)` passed as Snowflake SQL. Now even `SELECT 1` is refused, by name."""
    for sql in ("SELECT median(x) FROM t", "SELECT 1"):
        with pytest.raises(SQLRefused, match="no SQL allow-list for dialect") as err:
            check_sql(sql, dialect, {"t": {"x": "INT"}})
        assert err.value.signature == "unknown_dialect"
    with pytest.raises(SQLRefused, match="no SQL allow-list"):
        check_functions(sqlglot.parse_one("SELECT median(x) FROM t"), dialect)
    with pytest.raises(SQLRefused, match="no SQL allow-list"):
        check_types(sqlglot.parse_one("SELECT CAST(x AS INT) FROM t"), dialect)


def test_every_registered_warehouse_dialect_has_its_own_allow_list() -> None:
    """A new engine in platform/warehouse/ without platform/sql/allowlist/<name>.py fails here
    (its SQL would be refused by the gate)."""
    from dia_assets.platform.sql.allowlist import LISTS
    from dia_assets.platform.warehouse import REGISTRY

    assert set(REGISTRY) == set(LISTS) == set(ANONYMOUS) == set(TYPES)
    for name in REGISTRY:
        check_sql("SELECT abs(x) FROM t", name, {"t": {"x": "INT"}})
