"""Primary keys from values *and* names, found for each source on its own rows.

A candidate key is a set of complete columns that is unique once exact duplicate rows are
removed. Among the candidates, the choice follows how schemas are written:

1. The leading key. Designers put the key first: the leading run of identifier columns (an
   identifier, then identifiers or dates: a history table keyed by entity and date) is the key
   as far as it needs to go to be unique. When the whole run repeats, the shortest start of it
   plus a line number (an integer that counts 1, 2, 3 ... within each value of that start) is
   the key: an order's lines are (order, line), not (order, product) when both happen to be
   unique. Else the run is extended by the fewest later columns that make it unique,
   identifiers first, then dates, then other integers, earliest first.
2. Otherwise the best-scored candidate: identifier-likeness of names and values
   (`column_key_score`), a small bonus for the first column, `COMPOSITE_PENALTY` per extra
   column (its confidence: `score.pk_confidence`).
3. After foreign keys are known, some keys are revised (`assign.revise_keys`): a key other
   tables refer to, link and relationship tables, history tables.

Row order never changes a key: a file whose rows come in blocks by month of a date column
(exported partition by partition) gets an observation (`partitions.py`), not a new key.
"""

from __future__ import annotations

import itertools

import duckdb

from dia_assets.agents.interpreter import partitions
from dia_assets.agents.interpreter.keys.score import COMPOSITE_PENALTY, pk_confidence
from dia_assets.agents.interpreter.semantic import id_like_name
from dia_assets.agents.interpreter.table_info import (
    INT_TYPES,
    TableInfo,
    column_key_score,
    complete,
    keyable,
)
from dia_assets.contracts.interpretation import Column, FoundKeys, KeyCandidate, Source
from dia_assets.platform.naming import quote_ident

__all__ = ["count_distinct", "find_keys", "restore_found_keys", "unique_rows"]

MAX_LEADING = 4  # widest leading key considered
SYNTHETIC = ("ordinal",)  # columns the readers add to flattened children: not data


def unique_rows(source: Source) -> int:
    return source.row_count - source.duplicate_rows


def find_keys(con: duckdb.DuckDBPyConnection, info: TableInfo) -> None:
    """Fill `candidate_keys`, `primary_key` (and `range_partition`) on the source, and keep a
    copy of them in `found_keys`: they follow from the source's own rows alone, so a file whose
    bytes have not changed gets them back (`restore_found_keys`) without being read again."""
    _find_keys(con, info)
    src = info.source
    src.found_keys = FoundKeys(candidate_keys=src.candidate_keys, primary_key=src.primary_key,
                               range_partition=src.range_partition).model_copy(deep=True)


def restore_found_keys(src: Source) -> None:
    """Set the keys `find_keys` found for this source last time (`found_keys`) again."""
    if src.found_keys is not None:
        kept = src.found_keys.model_copy(deep=True)
        src.candidate_keys, src.primary_key, src.range_partition = (
            kept.candidate_keys, kept.primary_key, kept.range_partition)


def _find_keys(con: duckdb.DuckDBPyConnection, info: TableInfo) -> None:
    src = info.source
    if not src.columns:
        return
    if src.row_count == 0:
        _keys_from_names(src)
        return
    distinct_rows = unique_rows(src)
    singles = []
    for position, col in enumerate(src.columns):
        if complete(col) and col.distinct_count == distinct_rows and keyable(col):
            score = column_key_score(src, col) + (0.1 if position == 0 else 0.0)
            singles.append(([col.name], min(score, 1.0), position))
    best_single = max((s for _, s, _ in singles), default=0.0)
    leading = _leading_key(con, info, distinct_rows)
    composites = []
    if best_single < 0.6 and not leading:
        pool = sorted(
            (c for c in src.columns if complete(c) and column_key_score(src, c) > 0),
            key=lambda c: -column_key_score(src, c),
        )[:8]
        order = {c.name: i for i, c in enumerate(src.columns)}
        for size in (2, 3):
            combos = [tuple(sorted(combo, key=lambda c: order[c.name])) for combo in itertools.combinations(pool, size)]
            if not combos:
                break
            exprs = [
                f"count(DISTINCT ({', '.join(quote_ident(c.name) for c in combo)}))" for combo in combos
            ]
            counts = con.execute(f"SELECT {', '.join(exprs)} FROM {quote_ident(info.table)}").fetchone()
            for combo, count in zip(combos, counts, strict=True):
                if count == distinct_rows:
                    score = min(column_key_score(src, c) for c in combo) - COMPOSITE_PENALTY * (size - 1)
                    composites.append(([c.name for c in combo], score, sum(order[c.name] for c in combo)))
            if composites:
                break
    ranked = sorted(singles + composites, key=lambda k: (-k[1], len(k[0]), k[2]))
    src.candidate_keys = [
        KeyCandidate(columns=cols, confidence=pk_confidence(cols, score), reason=_pk_reason(src, cols, score))
        for cols, score, _ in ranked[:6]
    ]
    if leading and len(leading) > 1:
        src.candidate_keys.insert(0, KeyCandidate(
            columns=leading, confidence=0.85,
            reason=f"leading columns unique together over {src.row_count} rows while {leading[0]!r} repeats: "
            "a dependent, history or link table keyed by its parent",
        ))
    elif leading:
        src.candidate_keys.sort(key=lambda k: k.columns != leading)
    near = _near_key(con, info, distinct_rows) if not leading and (not ranked or ranked[0][1] < 0.6) else None
    if near:  # a nearly unique identifier beats a unique name or date
        src.candidate_keys.insert(0, near)
    if src.candidate_keys:
        src.primary_key = src.candidate_keys[0]
    src.range_partition = partitions.detect(con, info)  # an observation; the key stays


def _leading_key(con: duckdb.DuckDBPyConnection, info: TableInfo, distinct_rows: int) -> list[str] | None:
    """The leading key (module docstring, rule 1), or None when the first column is no identifier."""
    src = info.source
    cols = [c for c in src.columns if not (src.parent and c.name in SYNTHETIC)]
    first = cols[0]
    if not (complete(first) and _identifier(first)):
        return None
    if first.distinct_count == distinct_rows:
        return [first.name]
    prefix: list[Column] = [first]
    for col in cols[1:MAX_LEADING]:
        if not (complete(col) and (_identifier(col) or col.semantic_type in ("date", "timestamp"))):
            break
        prefix.append(col)
    table = quote_ident(info.table)
    counts = count_distinct(con, table, [prefix[:n] for n in range(2, len(prefix) + 1)])
    for n, count in zip(range(2, len(prefix) + 1), counts, strict=True):
        if count == distinct_rows:
            return [c.name for c in prefix[:n]]
    run = list(itertools.takewhile(_identifier, prefix))
    later = [c for c in cols if c not in run]
    key = _line_numbered(con, table, run, later, distinct_rows) or _extended(con, table, later, run, distinct_rows)
    return [c.name for c in key] if key else None


def _identifier(col: Column) -> bool:
    return keyable(col) and id_like_name(col.name)


def count_distinct(con: duckdb.DuckDBPyConnection, table: str, sets: list[list[Column]]) -> list[int]:
    if not sets:
        return []
    exprs = [f"count(DISTINCT ({', '.join(quote_ident(c.name) for c in cols)}))" for cols in sets]
    return list(con.execute(f"SELECT {', '.join(exprs)} FROM {table}").fetchone())


def _line_numbered(con: duckdb.DuckDBPyConnection, table: str, run: list[Column], later: list[Column],
                   distinct_rows: int) -> list[Column] | None:
    """The shortest start of the identifier run plus a line number that counts its rows
    (`lineitem(orderkey, linenumber)`, whatever other identifiers follow the order key)."""
    numbers = [c for c in later if complete(c) and keyable(c) and c.inferred_type.upper().startswith(INT_TYPES)][:8]
    for k in range(1, len(run) + 1):
        counts = count_distinct(con, table, [run[:k] + [c] for c in numbers])
        for col, n in zip(numbers, counts, strict=True):
            if n == distinct_rows and _line_number(con, table, run[:k], col):
                return [*run[:k], col]
    return None


def _extended(con: duckdb.DuckDBPyConnection, table: str, later: list[Column], run: list[Column],
              distinct_rows: int) -> list[Column] | None:
    """The leading identifiers repeat together: add the fewest later columns that make them
    unique, identifiers first, then dates, then other integers, earliest first (a pair unique
    by accident in a small table does not drop an identifier the designer put first)."""
    pool = [c for c in later if complete(c) and keyable(c) and (
        _identifier(c) or c.semantic_type in ("date", "integer") or c.inferred_type.upper().startswith(INT_TYPES))][:8]
    if not pool:
        return None
    for size in (1, 2):
        combos = [list(combo) for combo in itertools.combinations(pool, size)][:28]
        counts = count_distinct(con, table, [run + combo for combo in combos])
        unique = [combo for combo, n in zip(combos, counts, strict=True) if n == distinct_rows]
        if unique:
            return run + min(unique, key=lambda combo: _extension_rank(combo, pool))
    return None


def _extension_rank(combo: list[Column], pool: list[Column]) -> tuple[int, int]:
    if all(_identifier(c) for c in combo):
        kind = 0
    elif all(c.semantic_type == "date" or _identifier(c) for c in combo):
        kind = 1
    else:
        kind = 2
    return kind, sum(pool.index(c) for c in combo)


def _line_number(con: duckdb.DuckDBPyConnection, table: str, run: list[Column], col: Column) -> bool:
    """`col` counts 1, 2, 3 ... (or from 0) within each value of `run`: an order's line numbers."""
    group = ", ".join(quote_ident(c.name) for c in run)
    value = f"CAST({quote_ident(col.name)} AS BIGINT)" if col.physical_type.upper() != "VARCHAR" else (
        f"TRY_CAST(trim({quote_ident(col.name)}) AS BIGINT)")
    bad = con.execute(
        f"SELECT count(*) FILTER (WHERE lo IS NULL OR lo NOT IN (0, 1) OR hi - lo + 1 <> n) FROM "
        f"(SELECT min(v) AS lo, max(v) AS hi, count(*) AS n FROM (SELECT DISTINCT {group}, {value} AS v "
        f"FROM {table}) GROUP BY {group})"
    ).fetchone()[0]
    return bad == 0


NEAR_UNIQUE = 0.98


def _near_key(con: duckdb.DuckDBPyConnection, info: TableInfo, distinct_rows: int) -> KeyCandidate | None:
    """An identifier with a few conflicting duplicates is still the key; the duplicates are a
    quality issue for the expert, not a reason to lose the key."""
    src = info.source
    for col in src.columns:
        if not (complete(col) and id_like_name(col.name) and keyable(col)):
            continue
        if col.distinct_count >= NEAR_UNIQUE * distinct_rows:
            ident = quote_ident(col.name)
            dupes = con.execute(
                f"SELECT CAST({ident} AS VARCHAR), count(*) FROM (SELECT DISTINCT * FROM {quote_ident(info.table)}) "
                f"GROUP BY 1 HAVING count(*) > 1 ORDER BY 2 DESC, 1 LIMIT 5"
            ).fetchall()
            return KeyCandidate(
                columns=[col.name], confidence=0.6,
                reason=f"identifier {col.name!r} is unique except for {distinct_rows - col.distinct_count} "
                f"conflicting duplicate(s), e.g. {', '.join(str(v) for v, _ in dupes)}",
            )
    return None


def _pk_reason(src: Source, cols: list[str], score: float) -> str:
    dup = f" after removing {src.duplicate_rows} exact duplicate row(s)" if src.duplicate_rows else ""
    kind = "column" if len(cols) == 1 else f"{len(cols)}-column combination"
    how = "identifier-like name or values" if score >= 0.8 else "values only; name is not identifier-like"
    return f"{kind} unique and non-null over {src.row_count} rows{dup}; {how}"


def _keys_from_names(src: Source) -> None:
    """An empty table has no values to test: fall back to names, with low confidence."""
    idish = [c.name for c in src.columns if id_like_name(c.name)]
    if len(idish) >= 2 and len(idish) == len(src.columns) and len(idish) <= 3:
        cols = idish
    elif idish and src.columns[0].name in idish:
        cols = [src.columns[0].name]
    else:
        return
    src.primary_key = KeyCandidate(columns=cols, confidence=0.5, reason="no rows; chosen from column names only")
    src.candidate_keys = [src.primary_key]
