"""Profile every column of a loaded source with DuckDB, in few passes.

Pass A classifies text columns on a reservoir sample, once per distinct value, all
columns in one query over the unpivoted sample.
Pass B aggregates the full table (a few columns per query): nulls, blanks, null
tokens, distinct counts, lengths, and how many values the chosen type rejects.
Pass C reads single columns (cheap in a columnar table): exact top values,
unparseable examples, spelling variants and outliers.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from dia_assets.agents.interpreter.naming import quote_ident
from dia_assets.agents.interpreter.semantic import (
    PATTERNS,
    TypeDecision,
    currency_symbols,
    decide,
    id_like_name,
    sample_class_sql,
    shape_sql,
)
from dia_assets.agents.value_parsing import (
    NULL_TOKENS,
    numeric_text,
    parse_expression,
    present,
    sql_list,
    sql_str,
)
from dia_assets.contracts.interpretation import Column, ValueFormat

SAMPLE_ROWS = 20_000
TOP_K = 10
PASS_B_CHUNK = 48
DECILES = "[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]"
HUGE_FIELD = 1_000_000
TEXT_TYPES = ("VARCHAR", "JSON")
NUMERIC_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                 "UINTEGER", "UBIGINT", "FLOAT", "DOUBLE", "DECIMAL")


@dataclass
class SourceProfile:
    rows: int
    columns: list[Column]
    duplicate_rows: int
    variants: dict[str, list[tuple[str, list[tuple[str, int]]]]] = field(default_factory=dict)
    outliers: dict[str, tuple[int, list[str]]] = field(default_factory=dict)
    huge_fields: dict[str, int] = field(default_factory=dict)


def _is_text(physical: str) -> bool:
    return physical.upper() in TEXT_TYPES


def _is_numeric(physical: str) -> bool:
    return physical.upper().startswith(NUMERIC_TYPES)


def _typed_decision(name: str, physical: str) -> TypeDecision:
    """Columns that arrive typed (Parquet, JSON) keep their type; the name adds meaning."""
    p = physical.upper()
    fmt = ValueFormat()
    if p == "BOOLEAN":
        return TypeDecision("boolean", p, fmt)
    if p.startswith(("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "U")):
        return TypeDecision("id" if id_like_name(name) else "integer", p, fmt)
    if _is_numeric(p):
        return TypeDecision("decimal", p, fmt)
    if p == "DATE":
        return TypeDecision("date", p, fmt)
    if p.startswith("TIMESTAMP"):
        return TypeDecision("timestamp", p, fmt)
    if p.startswith("TIME"):
        return TypeDecision("time", p, fmt)
    return TypeDecision("unknown", p, fmt)


def profile_table(con: duckdb.DuckDBPyConnection, table: str) -> SourceProfile:
    qt = quote_ident(table)
    described = con.execute(f"DESCRIBE {qt}").fetchall()
    names = [row[0] for row in described]
    physical = {row[0]: str(row[1]) for row in described}
    rows = con.execute(f"SELECT count(*) FROM {qt}").fetchone()[0]
    sample = qt
    if rows > SAMPLE_ROWS:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE __sample AS SELECT * FROM {qt} "
            f"USING SAMPLE reservoir({SAMPLE_ROWS} ROWS) REPEATABLE (7)"
        )
        sample = "__sample"

    # Pass A: classify text columns on the sample.
    text_cols = [n for n in names if _is_text(physical[n])]
    decisions: dict[str, TypeDecision] = {}
    sample_stats: dict[str, dict] = {n: {} for n in text_cols}
    if text_cols and rows:
        stats_sql = sample_class_sql()
        datelike = sql_str(PATTERNS["datelike"])
        unpivot = ", ".join(quote_ident(n) for n in text_cols)
        result = con.execute(
            f"WITH long AS (UNPIVOT (SELECT {unpivot} FROM {sample}) ON COLUMNS(*) INTO NAME col VALUE raw), "
            f"vals AS (SELECT col, {present('raw')} AS v, count(*) AS n FROM long GROUP BY ALL), "
            f"d AS (SELECT col, v, n, regexp_full_match(v, {datelike}) AS dl FROM vals WHERE v IS NOT NULL) "
            f"SELECT col, {', '.join(sql for _, sql in stats_sql)} FROM d GROUP BY col"
        ).fetchall()
        for row in result:
            sample_stats[row[0]] = {stat: value or 0 for (stat, _), value in zip(stats_sql, row[1:], strict=True)}
        for name in text_cols:
            stats = sample_stats[name] or {"present": 0}
            stats["currency_symbols"] = currency_symbols(stats.get("currency_symbols") or [])
            # Near-unique counts: exact duplicate rows must not hide an identifier.
            unique_in_sample = stats["present"] > 0 and stats.get("distinct", 0) >= 0.95 * stats["present"]
            decisions[name] = decide(name, stats, rows, unique_in_sample)
    for name in names:
        if name not in decisions:
            decisions[name] = (
                _typed_decision(name, physical[name]) if not _is_text(physical[name])
                else TypeDecision("unknown", "VARCHAR", ValueFormat())
            )

    # Pass B: one aggregate over the full table.
    exprs, keys = [f"count(DISTINCT hash({', '.join(quote_ident(n) for n in names)}))"], [("", "distinct_rows")]
    def add(name: str, stat: str, sql: str) -> None:
        exprs.append(sql)
        keys.append((name, stat))

    for name in names:
        col = quote_ident(name)
        d = decisions[name]
        add(name, "nulls", f"count(*) FILTER ({col} IS NULL)")
        add(name, "distinct", f"count(DISTINCT {col})")
        if _is_text(physical[name]):
            value = present(col)
            parsed = parse_expression(value, _validation_type(d), d.value_format)
            add(name, "blanks", f"count(*) FILTER (trim({col}) = '')")
            add(name, "tokens", f"count(*) FILTER (lower(trim({col})) IN {sql_list(NULL_TOKENS)})")
            add(name, "token_list", f"list(DISTINCT lower(trim({col}))) FILTER (lower(trim({col})) IN {sql_list(NULL_TOKENS)})")
            add(name, "padded", f"count(*) FILTER ({col} <> trim({col}))")
            add(name, "max_len", f"max(length({col}))")
            add(name, "huge", f"count(*) FILTER (length({col}) > {HUGE_FIELD})")
            add(name, "failures", f"count(*) FILTER ({value} IS NOT NULL AND {parsed} IS NULL)")
            if d.inferred_type == "VARCHAR":
                add(name, "min", f"min({value})")
                add(name, "max", f"max({value})")
            else:
                add(name, "min", f"CAST(min({parsed}) AS VARCHAR)")
                add(name, "max", f"CAST(max({parsed}) AS VARCHAR)")
            if d.numeric:
                nt = numeric_text(value, d.value_format)
                ok = f"{parsed} IS NOT NULL"
                add(name, "mean", f"avg({parsed})")
                add(name, "quantiles", f"approx_quantile(CAST({parsed} AS DOUBLE), {DECILES})")
                add(name, "int_digits", f"max(length(regexp_extract({nt}, '^[+-]?0*(\\d*)', 1))) FILTER ({ok})")
                add(name, "frac_digits", f"max(length(regexp_extract({nt}, '\\.(\\d+)$', 1))) FILTER ({ok})")
        else:
            add(name, "min", f"CAST(min({col}) AS VARCHAR)")
            add(name, "max", f"CAST(max({col}) AS VARCHAR)")
            if _is_numeric(physical[name]):
                add(name, "mean", f"avg({col})")
                add(name, "quantiles", f"approx_quantile(CAST({col} AS DOUBLE), {DECILES})")
    full: dict[tuple[str, str], object] = {}
    # DuckDB's planning cost grows faster than linearly with the number of aggregates, and
    # a columnar table scans only the columns a query names: a few columns per query.
    for start in range(0, len(exprs), PASS_B_CHUNK):
        chunk = slice(start, start + PASS_B_CHUNK)
        values = con.execute(f"SELECT {', '.join(exprs[chunk])} FROM {qt}").fetchone()
        full.update(zip(keys[chunk], values, strict=True))
    stat = lambda name, key, default=0: full.get((name, key), default) or default  # noqa: E731

    profile = SourceProfile(rows=rows, columns=[], duplicate_rows=rows - (full[("", "distinct_rows")] or 0))
    for name in names:
        d = decisions[name]
        inferred = _final_type(d, stat(name, "int_digits"), stat(name, "frac_digits"),
                               stat(name, "min", None), stat(name, "max", None))
        nulls, blanks, tokens = stat(name, "nulls"), stat(name, "blanks"), stat(name, "tokens")
        non_null = rows - nulls
        distinct = stat(name, "distinct")
        fmt = d.value_format.model_copy()
        fmt.null_tokens = sorted(stat(name, "token_list", []) or [])
        fmt.trim = stat(name, "padded") > 0
        column = Column(
            name=name, original_name=name, physical_type=physical[name],
            semantic_type=d.semantic_type, inferred_type=inferred, value_format=fmt,
            null_count=nulls, blank_count=blanks, null_token_count=tokens,
            null_fraction=round((nulls + blanks + tokens) / rows, 6) if rows else 0.0,
            distinct_count=distinct, unique=non_null > 0 and distinct == non_null,
            min=_s(stat(name, "min", None)), max=_s(stat(name, "max", None)),
            mean=float(stat(name, "mean", None)) if stat(name, "mean", None) is not None else None,
            max_length=stat(name, "max_len", None),
            quantiles=[round(float(q), 6) for q in stat(name, "quantiles", []) or [] if q is not None],
            unparseable_count=stat(name, "failures"),
        )
        if stat(name, "huge"):
            profile.huge_fields[name] = stat(name, "huge")
        profile.columns.append(column)

    _pass_c(con, qt, sample, profile, decisions)
    con.execute("DROP TABLE IF EXISTS __sample")
    return profile


def _s(value: object) -> str | None:
    if value is None:
        return None
    text = str(value)
    return text if len(text) <= 200 else text[:200] + "…"


def _validation_type(d: TypeDecision) -> str:
    """While precision is unknown, integers validate as HUGEINT and decimals as DOUBLE."""
    if d.inferred_type == "BIGINT":
        return "HUGEINT"
    if d.inferred_type == "DECIMAL":
        return "DOUBLE"
    return d.inferred_type


def _final_type(d: TypeDecision, int_digits: int, frac_digits: int, lo: str | None, hi: str | None) -> str:
    """The narrowest SQL type that keeps every parsed value exactly."""
    if d.inferred_type == "BIGINT":
        try:
            low, high = int(lo or 0), int(hi or 0)
        except ValueError:
            return "BIGINT"
        if low >= -(2**31) and high < 2**31:
            return "INTEGER"
        if low >= -(2**63) and high < 2**63:
            return "BIGINT"
        return "HUGEINT" if low >= -(2**127) and high < 2**127 else "VARCHAR"
    if d.inferred_type == "DECIMAL":
        scale = int(frac_digits or 0)
        precision = max(int(int_digits or 0) + scale, scale + 1, 1)
        if precision > 38:
            return "DOUBLE"
        # Room to sum a column without overflow: at least 18 digits of precision.
        return f"DECIMAL({max(precision, 18)},{scale})"
    return d.inferred_type


def _pass_c(
    con: duckdb.DuckDBPyConnection, qt: str, sample: str, profile: SourceProfile,
    decisions: dict[str, TypeDecision],
) -> None:
    numeric_cols = []
    for column in profile.columns:
        col = quote_ident(column.name)
        text = _is_text(column.physical_type)
        value = present(col) if text else col
        if profile.rows and column.distinct_count < profile.rows - column.null_count:
            column.top_values = [
                (None if v is None else _s(v), n) for v, n in con.execute(
                    f"SELECT CAST({col} AS VARCHAR) __v, count(*) __n FROM {qt} WHERE {col} IS NOT NULL "
                    f"GROUP BY __v ORDER BY __n DESC, __v LIMIT {TOP_K}"
                ).fetchall()
            ]
        examples = con.execute(
            f"SELECT DISTINCT CAST({value} AS VARCHAR) FROM {sample} WHERE {value} IS NOT NULL LIMIT 5"
        ).fetchall()
        column.examples = [_s(e[0]) for e in examples]
        if text and profile.rows:
            column.patterns = [
                (p, n) for p, n in con.execute(
                    f"SELECT {shape_sql(value)} __p, count(*) __n FROM {sample} WHERE {value} IS NOT NULL "
                    "GROUP BY __p ORDER BY __n DESC, __p LIMIT 5"
                ).fetchall()
            ]
        if column.unparseable_count:
            parsed = parse_expression(value, _validation_type(decisions[column.name]), decisions[column.name].value_format)
            column.unparseable_examples = [
                _s(e[0]) for e in con.execute(
                    f"SELECT DISTINCT {col} FROM {qt} WHERE {value} IS NOT NULL AND {parsed} IS NULL "
                    f"ORDER BY 1 LIMIT 5"
                ).fetchall()
            ]
        if text and column.semantic_type == "categorical" and column.distinct_count <= 5000:
            groups = con.execute(
                f"SELECT lower(regexp_replace(trim({col}), '\\s+', ' ', 'g')) __k, "
                f"list({col} ORDER BY {col}), list(__n ORDER BY {col}) FROM "
                f"(SELECT {col}, count(*) __n FROM {qt} WHERE {value} IS NOT NULL GROUP BY {col}) "
                f"GROUP BY __k HAVING count(*) > 1 ORDER BY __k"
            ).fetchall()
            if groups:
                profile.variants[column.name] = [
                    (k, list(zip(spellings, counts, strict=True))) for k, spellings, counts in groups
                ]
        if column.semantic_type in ("integer", "decimal", "currency", "percentage") and column.inferred_type != "VARCHAR":
            numeric_cols.append(column)
    for column in numeric_cols:
        col = quote_ident(column.name)
        expr = (
            parse_expression(present(col), column.inferred_type, column.value_format)
            if _is_text(column.physical_type) else col
        )
        q1, q3 = con.execute(
            f"SELECT quantile_cont({expr}, 0.25), quantile_cont({expr}, 0.75) FROM {sample}"
        ).fetchone()
        if q1 is None or q3 is None or q3 == q1:
            continue
        iqr = float(q3) - float(q1)
        low, high = float(q1) - 3 * iqr, float(q3) + 3 * iqr
        count, examples = con.execute(
            f"SELECT count(*), list(DISTINCT CAST(__x AS VARCHAR))[1:5] FROM "
            f"(SELECT {expr} __x FROM {qt}) WHERE __x < {low} OR __x > {high}"
        ).fetchone()
        if count:
            profile.outliers[column.name] = (count, examples or [])
