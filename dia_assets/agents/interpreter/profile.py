"""Profile every column of a loaded source with DuckDB, in few passes.

Pass A classifies text columns on a reservoir sample, once per distinct value, all
columns in one query over the unpivoted sample.
Pass B aggregates the full table (a few columns per query): nulls, blanks, null
tokens, distinct counts, lengths, and how many values the chosen type rejects.
Pass C reads single columns (cheap in a columnar table): exact top values,
unparseable examples, spelling variants and outliers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import duckdb

from dia_assets.agents.interpreter import profile_wide
from dia_assets.agents.interpreter.integer_distinct import distinct_integer_texts
from dia_assets.agents.interpreter.numbers import NON_FINITE_WORDS, NUMERIC, non_finite_text_sql
from dia_assets.agents.interpreter.sample import SAMPLE_ROWS, draw_sample
from dia_assets.agents.interpreter.semantic import (
    PATTERNS,
    TypeDecision,
    currency_symbols,
    decide,
    id_like_name,
    sample_class_sql,
)
from dia_assets.agents.interpreter.table_info import NOT_KEYABLE
from dia_assets.agents.value_parsing import (
    NULL_TOKENS,
    numeric_text,
    parse_expression,
    present,
    sql_list,
)
from dia_assets.contracts.interpretation import Column, ValueFormat
from dia_assets.platform.naming import quote_ident, sql_str

TOP_K = 10
# Columns per pass-B query: one per query on long tables (measured: 12 columns of 1M rows
# take 6 s one per query and 13 s eight per query), more on short ones, where the cost of
# a query is its planning rather than its scan.
PASS_B_CELLS = 1_000_000
PASS_B_MAX_COLUMNS = 8
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
    non_finite: dict[str, int] = field(default_factory=dict)  # text columns that may end numeric


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
        draw_sample(con, qt, names, "__sample")
        sample = "__sample"

    # Pass A: classify text columns on the sample.
    text_cols = [n for n in names if _is_text(physical[n])]
    decisions: dict[str, TypeDecision] = {}
    sample_stats: dict[str, dict] = {n: {} for n in text_cols}
    if text_cols and rows:
        # singletons and pairs in the sample estimate the distinct values of the full column
        stats_sql = [*sample_class_sql(), ("once", "count(*) FILTER (n = 1)"), ("twice", "count(*) FILTER (n = 2)")]
        datelike = sql_str(PATTERNS["datelike"])
        result = []
        for chunk in _column_chunks(text_cols, min(rows, SAMPLE_ROWS)):  # bounded memory
            unpivot = ", ".join(quote_ident(n) for n in chunk)
            result += con.execute(
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

    # Pass B: aggregates over the full table, a few columns per query. Each column's
    # cleaned value and parsed value are projected once and the aggregates read those:
    # the same expression written into ten aggregates costs DuckDB ten times to plan.
    full: dict[tuple[str, str], object] = {}
    # Columns whose values repeat (judged on the sample) are aggregated over their (value,
    # count) groups: one GROUP BY scan answers pass B, the exact distinct count and the top
    # values, and every per-value expression runs once per distinct value, not per row.
    wide = len(names) >= profile_wide.WIDE_COLUMNS
    grouped = {n: f"__g{i}" for i, n in enumerate(names)
               if not wide and rows >= GROUPED_MIN_ROWS and n in text_cols and _repeats(sample_stats[n], rows)}
    for i, name in enumerate(names):
        if name not in grouped:
            continue
        con.execute(f"CREATE OR REPLACE TEMP TABLE {grouped[name]} AS "
                    f"SELECT {quote_ident(name)} AS __raw, count(*) AS __w FROM {qt} GROUP BY ALL")
        levels = _levels("__w")
        stats = _pass_b_stats(name, i, physical[name], decisions[name], levels, "__w", "__raw")
        stats.append(("exact_distinct", f"count(__c{i})"))
        values = con.execute(
            f"SELECT {', '.join(sql for _, sql in stats)} FROM {_projected(levels, grouped[name])}"
        ).fetchone()
        full.update(zip([(name, k) for k, _ in stats], values, strict=True))
        if decisions[name].numeric:
            full[(name, "quantiles")] = _weighted_deciles(con, grouped[name], i, name, physical[name], decisions[name])
    long_cols = [n for n in names if n not in grouped]
    # Columns read again after pass B go last (key candidates, for their exact distinct count;
    # then numbers, for their outliers): when the table is larger than the memory limit, their
    # blocks are still in memory when read again. The order changes no figure.
    long_cols.sort(key=lambda n: (decisions[n].semantic_type in NUMERIC_SEMANTICS,
                                  decisions[n].semantic_type not in NOT_KEYABLE))
    position = {n: i for i, n in enumerate(names)}
    if wide:  # a chunk of columns per query, unpivoted: planning costs per query, not per column
        _pass_b_unpivoted(con, qt, names, physical, decisions, rows, full)
        long_cols = []
    per_query = max(1, min(PASS_B_MAX_COLUMNS, PASS_B_CELLS // max(rows, 1)))
    subset = _decile_subset(rows, names)
    for start in range(0, len(long_cols), per_query):
        chunk = long_cols[start:start + per_query]
        levels, exprs, keys = _levels(), [], []
        if subset:  # the row id, carried up to the aggregates that pick the subset by it
            levels[0].append("rowid AS __rid")
            for level in levels[1:]:
                level.append("__rid")
        for name in chunk:
            i = position[name]
            for stat_name, sql in _pass_b_stats(name, i, physical[name], decisions[name], levels, subset=subset):
                exprs.append(sql)
                keys.append((name, stat_name))
        values = con.execute(f"SELECT {', '.join(exprs)} FROM {_projected(levels, qt)}").fetchone()
        full.update(zip(keys, values, strict=True))
    stat = lambda name, key, default=0: full.get((name, key), default) or default  # noqa: E731
    exact = _exact_distinct(con, qt, names, decisions, rows, stat,
                            {n: full[(n, "exact_distinct")] for n in grouped})
    complete_unique = any(
        exact.get(n) == rows and not stat(n, "nulls") for n in names
    )  # a complete unique column rules out duplicate rows without hashing every row
    distinct_rows = rows if complete_unique or not rows else con.execute(
        f"SELECT count(DISTINCT hash({', '.join(quote_ident(n) for n in names)})) FROM {qt}"
    ).fetchall()[0][0]

    profile = SourceProfile(rows=rows, columns=[], duplicate_rows=rows - distinct_rows)
    for name in names:
        d = decisions[name]
        inferred = _final_type(d, stat(name, "frac_digits"), stat(name, "min", None), stat(name, "max", None))
        if stat(name, "too_big"):
            inferred = "VARCHAR"
        nulls, blanks, tokens = stat(name, "nulls"), stat(name, "blanks"), stat(name, "tokens")
        non_null = rows - nulls
        distinct = exact.get(name, stat(name, "distinct"))
        fmt = d.value_format.model_copy()
        fmt.null_tokens = sorted(t for i, t in enumerate(NULL_TOKENS) if stat(name, "token_bits") & (1 << i))
        fmt.trim = stat(name, "padded") > 0
        column = Column(
            name=name, original_name=name, physical_type=physical[name],
            semantic_type=d.semantic_type, inferred_type=inferred, value_format=fmt,
            null_count=nulls, blank_count=blanks, null_token_count=tokens,
            null_fraction=round((nulls + blanks + tokens) / rows, 6) if rows else 0.0,
            distinct_count=distinct, distinct_approximate=name not in exact,
            unique=name in exact and non_null > 0 and distinct == non_null,
            min=_s(stat(name, "min", None)), max=_s(stat(name, "max", None)),
            mean=float(stat(name, "mean", None)) if stat(name, "mean", None) is not None else None,
            max_length=stat(name, "max_len", None),
            quantiles=[round(float(q), 6) for q in stat(name, "quantiles", []) or [] if q is not None],
            unparseable_count=0 if inferred == "VARCHAR" else stat(name, "failures"),
        )
        if stat(name, "huge"):
            profile.huge_fields[name] = stat(name, "huge")
        if (name, "non_finite") in full:
            profile.non_finite[name] = stat(name, "non_finite")
        profile.columns.append(column)

    _pass_c(con, qt, sample, profile, decisions, grouped)
    con.execute("DROP TABLE IF EXISTS __sample")
    for table in grouped.values():
        con.execute(f"DROP TABLE IF EXISTS {table}")
    return profile


CELLS_PER_QUERY = 2_000_000  # values one unpivoting query holds: bounds its memory


def _column_chunks(names: list[str], rows: int) -> list[list[str]]:
    """Columns in chunks of at most CELLS_PER_QUERY values (at least one column)."""
    size = max(1, CELLS_PER_QUERY // max(rows, 1))
    return [names[i:i + size] for i in range(0, len(names), size)]


def _unpivoted(table: str, names: list[str]) -> str:
    """(__col, __raw) for every non-NULL value of `names` (all of one physical type)."""
    cols = ", ".join(quote_ident(n) for n in names)
    return f"(UNPIVOT (SELECT {cols} FROM {table}) ON COLUMNS(*) INTO NAME __col VALUE __raw)"


def _signature(physical: str, d: TypeDecision) -> tuple:
    """Columns with equal signatures get the same pass-B expressions."""
    return (physical.upper(), d.inferred_type, _validation_type(d), d.numeric, d.value_format.model_dump_json())


def _pass_b_unpivoted(
    con: duckdb.DuckDBPyConnection, qt: str, names: list[str], physical: dict[str, str],
    decisions: dict[str, TypeDecision], rows: int, full: dict,
) -> None:
    """Pass B for wide tables: the columns of one signature unpivoted, a chunk per query,
    the same aggregates grouped by column. NULLs are not unpivoted (every aggregate but the
    NULL count ignores them): NULLs = rows - values."""
    by_signature: dict[tuple, list[str]] = {}
    for name in names:
        by_signature.setdefault(_signature(physical[name], decisions[name]), []).append(name)
    for members in by_signature.values():
        first = members[0]
        levels = _levels("__col")
        stats = _pass_b_stats(first, 0, physical[first], decisions[first], levels, raw="__raw")
        stats.append(("__values", "count(*)"))
        for chunk in _column_chunks(members, rows):
            for name in chunk:  # a column with no value at all gets no group
                full[(name, "nulls")] = rows
            got = con.execute(
                f"SELECT __col, {', '.join(sql for _, sql in stats)} "
                f"FROM {_projected(levels, _unpivoted(qt, chunk))} GROUP BY __col"
            ).fetchall()
            for row in got:
                full.update(zip([(row[0], k) for k, _ in stats], row[1:], strict=True))
                full[(row[0], "nulls")] = rows - full.pop((row[0], "__values"))


GROUPED_MIN_ROWS = 50_000  # below, a scan costs less than building the groups
GROUPED_SHARE = 0.5  # grouped when the sample holds at most this many distinct values per value
# ... or when the full column is estimated to hold at most this many distinct values per value:
# a margin below the 0.5 at which pass C counts top values anyway, so a near-unique column is
# not grouped by a lucky sample.
GROUPED_ESTIMATE_SHARE = 0.25
GROUPED_MIN_PAIRS = 20  # values seen twice in the sample; fewer leave the estimate too loose


def _repeats(sample: dict, rows: int) -> bool:
    """Whether grouping the column pays: its values repeat. A 5,000-row sample of a column
    with 50,000 distinct values in a million rows looks near-unique, yet a GROUP BY serves
    pass B, the exact distinct count and the top values at once; the Chao1 estimate
    (distinct + singletons^2 / 2 pairs) sees the repeats from the values seen twice."""
    present = sample.get("present") or 0
    distinct = sample.get("distinct") or 0
    if present <= 0:
        return False
    if distinct <= GROUPED_SHARE * present:
        return True
    once, twice = sample.get("once") or 0, sample.get("twice") or 0
    if twice < GROUPED_MIN_PAIRS:  # too few repeats seen to trust the estimate
        return False
    estimate = distinct + once * (once - 1) / (2 * (twice + 1))  # bias-corrected Chao1
    present_rows = rows * present / min(rows, SAMPLE_ROWS)
    return estimate <= GROUPED_ESTIMATE_SHARE * present_rows


def _weighted_deciles(
    con: duckdb.DuckDBPyConnection, groups: str, i: int, name: str, physical: str, d: TypeDecision
) -> list[float]:
    """Exact deciles of the parsed values from their (value, count) groups: the value at
    position floor(q * (total - 1)), as the row-by-row pass takes them (`_deciles_sql`)."""
    levels = _levels("__w")
    _pass_b_stats(name, i, physical, d, levels, "__w", "__raw")
    x = f"__x{i}"
    rows = con.execute(
        f"SELECT CAST({x} AS DOUBLE), sum(__w) FROM {_projected(levels, groups)} "
        f"WHERE {x} IS NOT NULL GROUP BY 1 ORDER BY 1"
    ).fetchall()
    total = sum(n for _, n in rows)
    if not total:
        return []
    out, seen, k = [], 0, 0
    for q in (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9):
        target = int(q * (total - 1))  # the value at this 0-based position in sorted order
        while seen + rows[k][1] <= target:
            seen += rows[k][1]
            k += 1
        out.append(rows[k][0])
    return out


def _levels(*carried: str) -> list[list[str]]:
    """Four projection levels for pass B: raw and trimmed text; the lower-cased short text
    (null tokens are at most 6 characters); the present value; the parsed value. Each
    expression is computed once and read by name: DuckDB does not share `trim(x)` written
    into several aggregates."""
    return [list(carried) for _ in range(4)]


def _projected(levels: list[list[str]], source: str) -> str:
    sql = source
    for level in levels:
        sql = f"(SELECT {', '.join(level)} FROM {sql})"
    return sql


def trim_sql(col: str) -> str:
    """`trim(col)`, skipped where it cannot change anything: DuckDB's trim removes spaces
    (U+0020 and the other Unicode spaces), so pure-ASCII text (as many bytes as characters)
    that neither starts nor ends with ' ' is returned as it is, without a copy."""
    return (f"CASE WHEN strlen({col}) = length({col}) AND NOT ({col} LIKE ' %' OR {col} LIKE '% ') "
            f"THEN {col} ELSE trim({col}) END")


def _present_projected(names: list[str]) -> tuple[list[list[str]], dict[str, str]]:
    """Projection levels (see `_levels`) giving each text column's present value
    (= `present(col)`: NULL for NULL, blanks and null tokens, else the trimmed text),
    computed once per row; and the name each value is read by."""
    levels, out, longest = _levels(), {}, max(len(t) for t in NULL_TOKENS)
    for i, name in enumerate(names):
        col, trimmed, short, value = f"__pc{i}", f"__pt{i}", f"__ps{i}", f"__pv{i}"
        levels[0] += [f"{quote_ident(name)} AS {col}", f"{trim_sql(quote_ident(name))} AS {trimmed}"]
        levels[1] += [col, trimmed, f"CASE WHEN length({trimmed}) <= {longest} THEN lower({trimmed}) END AS {short}"]
        levels[2] += [f"CASE WHEN {col} IS NULL OR {trimmed} = '' OR {short} IN {sql_list(NULL_TOKENS)} "
                      f"THEN NULL ELSE {trimmed} END AS {value}"]
        levels[3] += [value]
        out[name] = value
    return levels, out


DECILE_VALUES = 1_000_000  # deciles are exact over this many values at most (they are held in memory)


def _decile_subset(rows: int, names: list[str]) -> str | None:
    """The rows a long table's deciles are taken from: every row up to DECILE_VALUES, beyond
    that about DECILE_VALUES rows picked by a hash of their row id (`__rid`), the same rows
    every run. None: every row (also when a column named rowid hides the row id)."""
    if rows <= DECILE_VALUES or "rowid" in {n.lower() for n in names}:
        return None
    return f"hash(__rid) % {-(-rows // DECILE_VALUES)} = 0"


def _deciles_sql(x: str, subset: str | None = None) -> str:
    """Exact deciles of `x` (the value at position floor(q * (n - 1)), as `_weighted_deciles`
    takes them), over the rows `subset` keeps. Exact answers do not depend on how DuckDB's
    threads split the rows; a t-digest (`approx_quantile`) merged in thread order did."""
    return f"quantile_disc(CAST({x} AS DOUBLE), {DECILES})" + (f" FILTER ({subset})" if subset else "")


def _mean_sql(x: str, floating: bool) -> str:
    """The mean of `x`. Integers and decimals sum exactly. A plain floating-point sum depends on
    the order DuckDB's threads add the rows in; the compensated one (Kahan: `favg`) carries the
    rounding error along, so the order does not show in the result."""
    return f"favg({x})" if floating else f"avg({x})"


FLOATING = ("DOUBLE", "FLOAT", "REAL")


def _pass_b_stats(
    name: str, i: int, physical: str, d: TypeDecision, levels: list[list[str]],
    weight: str | None = None, raw: str | None = None, subset: str | None = None,
) -> list[tuple[str, str]]:
    """(stat, aggregate) pairs for one column; appends the projections they read to
    `levels` (see `_levels`). With `weight`, each row is a distinct value seen `weight`
    times; the counts are the same and the deciles are left to `_weighted_deciles`.
    `subset`: the rows the deciles are taken from (`_decile_subset`), None for all."""
    raw = raw or quote_ident(name)
    col, trimmed, short, value, parsed, nt = (f"__c{i}", f"__t{i}", f"__s{i}", f"__v{i}", f"__x{i}", f"__n{i}")
    bit = f"__b{i}"
    count = (lambda cond: f"count(*) FILTER ({cond})") if weight is None else (  # noqa: E731
        lambda cond: f"coalesce(sum({weight}) FILTER ({cond}), 0)")
    levels[0].append(f"{raw} AS {col}")
    for level in levels[1:]:
        level.append(col)
    out = [("nulls", count(f"{col} IS NULL")),
           ("distinct", f"approx_count_distinct({col})")]  # exact where it matters, later
    if not _is_text(physical):
        out += [("min", f"CAST(min({col}) AS VARCHAR)"), ("max", f"CAST(max({col}) AS VARCHAR)")]
        if _is_numeric(physical):
            out += [("mean", _mean_sql(col, physical.upper() in FLOATING)), ("quantiles", _deciles_sql(col, subset))]
        return out
    # Lower-casing keeps the length, so a value longer than every null token is none; in a
    # column that may end numeric the lower-cased short text also answers the NaN/Infinity words.
    may_be_numeric = d.inferred_type.upper().startswith(NUMERIC)
    longest = max(len(t) for t in (*NULL_TOKENS, *(NON_FINITE_WORDS if may_be_numeric else ())))
    levels[0].append(f"{trim_sql(raw)} AS {trimmed}")
    levels[1] += [trimmed, f"CASE WHEN length({trimmed}) <= {longest} THEN lower({trimmed}) END AS {short}"]
    # = present(raw): NULL for NULL, blanks and null tokens, else the trimmed text
    # the null token's bit (0: none), read by the token count and the token bitmask
    levels[2] += [trimmed, short, f"CASE WHEN {col} IS NULL OR {trimmed} = '' OR {short} IN "
                  f"{sql_list(NULL_TOKENS)} THEN NULL ELSE {trimmed} END AS {value}", f"{_token_bit(short)} AS {bit}"]
    levels[3] += [trimmed, short, value, bit,
                  f"{(parse := parse_expression(value, _validation_type(d), d.value_format))} AS {parsed}"]
    out += [
        ("blanks", count(f"{trimmed} = ''")),
        ("tokens", count(f"{bit} <> 0")),
        ("token_bits", f"bit_or({bit})"),
        ("padded", count(f"{col} <> {trimmed}")),
        ("max_len", f"max(length({col}))"),
        ("huge", count(f"length({col}) > {HUGE_FIELD}")),
        ("failures", count(f"{value} IS NOT NULL AND {parsed} IS NULL")),
    ]
    if d.inferred_type == "VARCHAR":
        out += [("min", f"min({value})"), ("max", f"max({value})")]
    else:
        out += [("min", f"CAST(min({parsed}) AS VARCHAR)"), ("max", f"CAST(max({parsed}) AS VARCHAR)")]
    if may_be_numeric:  # fused here: no pass of its own
        # Where the parsed value is the DOUBLE parse of the present text, it is the same test
        # without parsing again: rows with no present value are NULL, blank or a null token,
        # and no null token parses to an infinity unless it is one of the words counted anyway.
        # A text that parsed as an integer (at most 39 digits) is finite as a DOUBLE too: only
        # the others are parsed again.
        as_double = (parsed if parse == f"TRY_CAST({value} AS DOUBLE)"
                     else f"CASE WHEN {parsed} IS NULL THEN TRY_CAST({trimmed} AS DOUBLE) END"
                     if _validation_type(d) == "HUGEINT" else None)
        out.append(("non_finite", non_finite_text_sql(trimmed, weight, trimmed=True, lowered=short,
                                                      parsed_double=as_double)))
    if d.numeric:
        levels[3].append(f"{numeric_text(value, d.value_format)} AS {nt}")
        ok = f"{parsed} IS NOT NULL"
        floating = _validation_type(d) in FLOATING  # integers parse as HUGEINT: exact sums
        if weight is None:
            out += [("mean", _mean_sql(parsed, floating)), ("quantiles", _deciles_sql(parsed, subset))]
        else:
            total = f"fsum({parsed} * {weight})" if floating else f"sum({parsed} * {weight})"
            out.append(("mean", f"{total} / sum({weight}) FILTER ({ok})"))
        # integer digits follow from min and max; fraction digits need the text (decimals only)
        if d.inferred_type != "BIGINT":
            out.append(("frac_digits",
                        f"max(length({nt}) - strpos({nt}, '.')) FILTER ({ok} AND strpos({nt}, '.') > 0)"))
        else:  # integers beyond HUGEINT stay exact only as text; the pattern is tried on failures only
            # (CASE, not AND: DuckDB would match the pattern on every row)
            out.append(("too_big", count(f"CASE WHEN {value} IS NOT NULL AND {parsed} IS NULL "
                                         f"THEN regexp_full_match({nt}, '[+-]?[0-9]+') ELSE false END")))
    return out


EXACT_BELOW = 100_000  # small hash tables: exact distinct counts cost little
DISTINCT_CHUNK = 16


def _token_bit(lowered: str) -> str:
    """The bit of the null token `lowered` (trimmed, lower-cased text) is, else 0."""
    cases = " ".join(f"WHEN {sql_str(t)} THEN {1 << i}" for i, t in enumerate(NULL_TOKENS))
    return f"CASE {lowered} {cases} ELSE 0 END"


INTEGER_DISTINCT_MIN_ROWS = 50_000  # below, one count(DISTINCT) query for 16 columns costs less


def _integer_text(d: TypeDecision, stat, name: str) -> bool:  # noqa: ANN001
    """A text column read as integers whose every present value parsed, none blank, padded
    or a null token: it may be canonical integer text (`distinct_integer_texts` checks)."""
    return d.inferred_type == "BIGINT" and stat(name, "min", None) is not None and not any(
        stat(name, k) for k in ("failures", "blanks", "tokens", "padded"))


def _exact_distinct(
    con: duckdb.DuckDBPyConnection, qt: str, names: list[str], decisions: dict[str, TypeDecision],
    rows: int, stat, known: dict[str, int],  # noqa: ANN001
) -> dict[str, int]:
    """Exact distinct counts where they decide something: small cardinalities, and columns
    that could be keys (uniqueness must be exact). Free text, amounts and timestamps keep
    the HyperLogLog estimate."""
    wanted = []
    for name in names:
        approx, non_null = stat(name, "distinct"), rows - stat(name, "nulls")
        could_key = decisions[name].semantic_type not in NOT_KEYABLE and approx >= 0.5 * non_null
        if approx <= EXACT_BELOW or could_key:
            wanted.append(name)
    out = {n: known[n] for n in wanted if n in known}  # counted on the groups already
    wanted = [n for n in wanted if n not in known]
    if len(names) >= profile_wide.WIDE_COLUMNS:  # unpivoted, a chunk of one type per query
        physical = dict(con.execute(f"SELECT column_name, column_type FROM (DESCRIBE {qt})").fetchall())
        by_type: dict[str, list[str]] = {}
        for name in wanted:
            by_type.setdefault(physical[name], []).append(name)
        for members in by_type.values():
            for chunk in _column_chunks(members, rows):
                out.update(dict.fromkeys(chunk, 0))  # no value at all: no group
                out.update(con.execute(
                    f"SELECT __col, count(DISTINCT __raw) FROM {_unpivoted(qt, chunk)} GROUP BY __col"
                ).fetchall())
        return out
    if rows >= INTEGER_DISTINCT_MIN_ROWS:  # canonical integer text: a bitmap, not a hash of the text
        for name in [n for n in wanted if _integer_text(decisions[n], stat, n)]:
            counted = distinct_integer_texts(con, qt, name, stat(name, "min", None), stat(name, "max", None), rows)
            if counted is not None:
                out[name] = counted
        wanted = [n for n in wanted if n not in out]
    # Each count(DISTINCT) keeps its own hash table: a few columns per query bound the memory.
    per_query = max(1, min(DISTINCT_CHUNK, PASS_B_CELLS // max(rows, 1)))  # long tables: one per query
    for start in range(0, len(wanted), per_query):
        chunk = wanted[start:start + per_query]
        values = con.execute(
            f"SELECT {', '.join(f'count(DISTINCT {quote_ident(n)})' for n in chunk)} FROM {qt}"
        ).fetchall()[0]
        out.update(zip(chunk, values, strict=True))
    return out


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


def _int_digits(lo: str | None, hi: str | None) -> int:
    try:
        return max(len(str(abs(int(float(v))))) for v in (lo, hi) if v is not None)
    except (TypeError, ValueError, OverflowError):
        return 38


def _final_type(d: TypeDecision, frac_digits: int, lo: str | None, hi: str | None) -> str:
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
        precision = max(_int_digits(lo, hi) + scale, scale + 1, 1)
        if precision > 38:
            return "DOUBLE"
        # Room to sum a column without overflow: at least 18 digits of precision.
        return f"DECIMAL({max(precision, 18)},{scale})"
    return d.inferred_type


OUTLIER_CHUNK = 16
GROUPED_MAX = 5_000  # up to this many distinct values, one GROUP BY serves top values and variants
NUMERIC_SEMANTICS = ("integer", "decimal", "currency", "percentage")


def _pass_c(
    con: duckdb.DuckDBPyConnection, qt: str, sample: str, profile: SourceProfile,
    decisions: dict[str, TypeDecision], groups: dict[str, str],
) -> None:
    physical_of = {c.name: c.physical_type for c in profile.columns}

    def grouped(column: Column) -> bool:  # near-unique columns have no informative top values
        non_null = profile.rows - column.null_count
        return bool(profile.rows) and column.distinct_count < non_null and column.distinct_count <= 0.5 * non_null

    wide = len(profile.columns) >= profile_wide.WIDE_COLUMNS
    if wide:  # the same answers, a chunk of columns per query
        kinds = {c.name: _is_text(c.physical_type) for c in profile.columns}
        sampled = min(profile.rows, SAMPLE_ROWS)
        batch_examples = profile_wide.examples(con, sample, kinds, sampled)
        batch_patterns = profile_wide.patterns(
            con, sample, [n for n in kinds if _is_text(physical_of[n])], sampled) if profile.rows else {}
        batch_counts = profile_wide.value_counts(
            con, qt, [c.name for c in profile.columns if grouped(c)], profile.rows)
    elif profile.rows:  # value shapes of every text column from one query over the sample
        batch_patterns = profile_wide.patterns(
            con, sample, [c.name for c in profile.columns if _is_text(c.physical_type)], min(profile.rows, SAMPLE_ROWS))
    for column in profile.columns:
        col = quote_ident(column.name)
        text = _is_text(column.physical_type)
        value = present(col) if text else col
        if grouped(column):
            limit = "" if column.distinct_count <= GROUPED_MAX else f" LIMIT {TOP_K}"
            if column.name in groups:  # the groups are at hand: the same rows, already counted
                counts = con.execute(
                    f"SELECT CAST(__raw AS VARCHAR) __v, __w __n FROM {groups[column.name]} "
                    f"WHERE __raw IS NOT NULL ORDER BY __n DESC, __v{limit}"
                ).fetchall()
            else:
                counts = batch_counts[column.name] if wide else con.execute(
                    f"SELECT CAST({col} AS VARCHAR) __v, count(*) __n FROM {qt} WHERE {col} IS NOT NULL "
                    f"GROUP BY __v ORDER BY __n DESC, __v{limit}"
                ).fetchall()
            column.top_values = [(_s(v), n) for v, n in counts[:TOP_K]]
            if text and column.semantic_type == "categorical" and not limit:
                variants = spelling_variants(counts)
                if variants:
                    profile.variants[column.name] = variants
        if wide:
            column.examples = [_s(e) for e in batch_examples[column.name]]
            column.patterns = batch_patterns.get(column.name, []) if text else []
        else:
            column.examples = [_s(e[0]) for e in con.execute(  # the first ones in sample order
                f"SELECT CAST({value} AS VARCHAR) FROM {sample} WHERE {value} IS NOT NULL "
                "GROUP BY 1 ORDER BY min(rowid), 1 LIMIT 5"
            ).fetchall()]
        if text and profile.rows and not wide:
            column.patterns = batch_patterns[column.name]
        if column.unparseable_count:
            d = decisions[column.name]
            parsed = parse_expression(value, _validation_type(d), d.value_format)
            column.unparseable_examples = [_s(e[0]) for e in con.execute(
                f"SELECT DISTINCT {col} FROM {qt} WHERE {value} IS NOT NULL AND {parsed} IS NULL ORDER BY 1 LIMIT 5"
            ).fetchall()]
    _outliers(con, qt, sample, profile, groups)


def spelling_variants(counts: list[tuple[str | None, int]]) -> list[tuple[str, list[tuple[str, int]]]]:
    """Values that differ only in case or whitespace, grouped under their folded form."""
    groups: dict[str, list[tuple[str, int]]] = {}
    for v, n in counts:
        if v is None or not v.strip() or v.strip().lower() in NULL_TOKENS:
            continue
        groups.setdefault(" ".join(v.split()).lower(), []).append((v, n))
    return [(k, sorted(spellings)) for k, spellings in sorted(groups.items()) if len(spellings) > 1]


def _outliers(
    con: duckdb.DuckDBPyConnection, qt: str, sample: str, profile: SourceProfile, groups: dict[str, str],
) -> None:
    """Values beyond 3 IQR, a few numeric columns per pass; fences come from the sample.
    (Hundreds of columns in one query make DuckDB's planning far slower than the scans.)
    A column profiled over its (value, count) groups is counted over them: the same values,
    each parsed once."""
    exprs = {
        c.name: _outlier_value(c, quote_ident(c.name))
        for c in profile.columns
        if c.semantic_type in NUMERIC_SEMANTICS and c.inferred_type != "VARCHAR"
    }
    if not exprs or not profile.rows:
        return
    if len(profile.columns) >= profile_wide.WIDE_COLUMNS:
        _outliers_unpivoted(con, qt, sample, profile, list(exprs))
        return
    by_column = {c.name: c for c in profile.columns}
    for name in [n for n in exprs if n in groups]:
        _outliers_of(con, sample, profile, {name: exprs[name]}, groups[name],
                     {name: _outlier_value(by_column[name], "__raw")}, "__w")
    names = [n for n in exprs if n not in groups]
    per_query = max(1, min(OUTLIER_CHUNK, PASS_B_CELLS // profile.rows))  # long tables: one per query
    for start in range(0, len(names), per_query):
        chunk = {n: exprs[n] for n in names[start:start + per_query]}
        text = [n for n in chunk if _is_text(by_column[n].physical_type)]
        levels, present_of = _present_projected(text)
        for level in levels:  # the other columns pass through
            level += [quote_ident(n) for n in chunk if n not in present_of]
        counted = {n: _outlier_value(by_column[n], present_of[n], cleaned=True) if n in present_of else chunk[n]
                   for n in chunk}
        _outliers_of(con, sample, profile, chunk, _projected(levels, qt), counted)


def _outlier_value(c: Column, col: str, cleaned: bool = False) -> str:
    """The parsed value of column `c` read from `col` (`cleaned`: `col` holds the present
    value already), as the outlier fences compare it."""
    if _is_text(c.physical_type):
        return parse_expression(col if cleaned else present(col), c.inferred_type, c.value_format)
    return col


def _fence(q: list[float] | None) -> tuple[float, float] | None:
    """3 IQR beyond the quartiles. Infinite quartiles (a column full of Infinity) give no
    fence, and no SQL literal."""
    if q and q[0] is not None and q[1] is not None and q[1] > q[0] and math.isfinite(q[1] - q[0]):
        iqr = q[1] - q[0]
        low, high = q[0] - 3 * iqr, q[1] + 3 * iqr
        if math.isfinite(low) and math.isfinite(high):
            return low, high
    return None


def _outliers_unpivoted(
    con: duckdb.DuckDBPyConnection, qt: str, sample: str, profile: SourceProfile, names: list[str]
) -> None:
    """Outliers of a wide table: the columns of one type and format unpivoted, a chunk per
    query, quartiles and counts grouped by column."""
    by_signature: dict[tuple, list[str]] = {}
    for c in profile.columns:
        if c.name in names:
            key = (c.physical_type.upper(), c.inferred_type, c.value_format.model_dump_json())
            by_signature.setdefault(key, []).append(c.name)
    for members in by_signature.values():
        c = next(col for col in profile.columns if col.name == members[0])
        x = (f"CAST({parse_expression(present('__raw'), c.inferred_type, c.value_format)} AS DOUBLE)"
             if _is_text(c.physical_type) else "CAST(__raw AS DOUBLE)")
        for chunk in _column_chunks(members, min(profile.rows, SAMPLE_ROWS)):
            quartiles = con.execute(
                f"SELECT __col, quantile_cont({x}, [0.25, 0.75]) FROM {_unpivoted(sample, chunk)} GROUP BY __col"
            ).fetchall()
            fences = {name: f for name, q in quartiles if (f := _fence(q))}
            if not fences:
                continue
            table = ", ".join(f"({sql_str(n)}, CAST({lo!r} AS DOUBLE), CAST({hi!r} AS DOUBLE))"
                              for n, (lo, hi) in fences.items())
            for name, count, lowest, highest in con.execute(
                f"SELECT __col, count(*) FILTER (__x < __lo OR __x > __hi), min(__x) FILTER (__x < __lo), "
                f"max(__x) FILTER (__x > __hi) FROM (SELECT __col, {x} AS __x FROM "
                f"{_unpivoted(qt, list(fences))}) JOIN (VALUES {table}) f(__col, __lo, __hi) USING (__col) "
                "GROUP BY __col"
            ).fetchall():
                if count:
                    profile.outliers[name] = (count, [f"{v:g}" for v in (lowest, highest) if v is not None])


def _within(column: Column, fence: tuple[float, float]) -> bool:
    """Whether the column's full-data minimum and maximum (pass B) lie inside the fences, so
    no value is beyond them and the counting scan can be skipped. Only when every present
    value parsed (the range covers them all), and with a margin far above the rounding by
    which the validation parse (DOUBLE) and the final type's parse may differ."""
    if column.unparseable_count:
        return False
    try:
        lo, hi = float(column.min or "nan"), float(column.max or "nan")
    except ValueError:
        return False
    low, high = fence
    margin = 1e-9 * max(1.0, abs(low), abs(high))
    return math.isfinite(lo) and math.isfinite(hi) and low + margin <= lo and hi <= high - margin


def _outliers_of(
    con: duckdb.DuckDBPyConnection, sample: str, profile: SourceProfile, exprs: dict[str, str],
    source: str, counted: dict[str, str], weight: str | None = None,
) -> None:
    """Fences from the sample quartiles of `exprs`; counts over `source`, where `counted`
    gives each column's value (with `weight`, a row stands for that many)."""
    quartiles = con.execute(
        "SELECT " + ", ".join(f"quantile_cont(CAST({e} AS DOUBLE), [0.25, 0.75])" for e in exprs.values())
        + f" FROM {sample}"
    ).fetchall()[0]
    by_name = {c.name: c for c in profile.columns}
    fences = {name: f for name, q in zip(exprs, quartiles, strict=True)
              if (f := _fence(q)) and not _within(by_name[name], f)}
    if not fences:
        return
    count = (lambda cond: f"count(*) FILTER ({cond})") if weight is None else (  # noqa: E731
        lambda cond: f"coalesce(sum({weight}) FILTER ({cond}), 0)")
    parts, projected = [], [weight] if weight else []
    for i, (name, (low, high)) in enumerate(fences.items()):
        x = f"__o{i}"  # the parsed value, projected once and read by three aggregates
        projected.append(f"CAST({counted[name]} AS DOUBLE) AS {x}")
        parts += [count(f"{x} < {low} OR {x} > {high}"),
                  f"min({x}) FILTER ({x} < {low})", f"max({x}) FILTER ({x} > {high})"]
    values = con.execute(f"SELECT {', '.join(parts)} FROM (SELECT {', '.join(projected)} FROM {source})").fetchall()[0]
    for i, name in enumerate(fences):
        n, lowest, highest = values[3 * i : 3 * i + 3]
        if n:
            profile.outliers[name] = (n, [f"{v:g}" for v in (lowest, highest) if v is not None])
