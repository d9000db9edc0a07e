"""Primary keys from values *and* names.

A candidate key is a set of complete columns that is unique once exact duplicate rows are
removed. Among the candidates, the choice follows how schemas are written:

1. The leading key. Designers put the key first: the shortest unique prefix of the columns
   is the key when its columns are identifier-like (or, after the first, dates: a history
   table keyed by entity and date). When the first column is an identifier that repeats,
   the table is a dependent, history or link table and its key includes that column, even
   when a later column happens to be unique on its own (`payments(customer, check_number)`).
2. Otherwise the best-scored candidate: identifier-likeness of names and values
   (`column_key_score`), a small bonus for the first column, `COMPOSITE_PENALTY` per extra
   column.
3. A single-column key K of a file whose rows come in blocks by month (or year, day) of a
   date column D, D itself out of order, was exported from a table range-partitioned on D:
   the key is (D, K), as PostgreSQL requires (`partitions.py`); K stays a candidate key.
"""

from __future__ import annotations

import itertools

import duckdb

from dia_assets.agents.interpreter import partitions
from dia_assets.agents.interpreter.naming import quote_ident
from dia_assets.agents.interpreter.semantic import id_like_name
from dia_assets.agents.interpreter.table_info import (
    HIGH,
    NOT_KEYABLE,
    TableInfo,
    column_key_score,
    complete,
    keyable,
)
from dia_assets.contracts.interpretation import Column, ForeignKey, FoundKeys, KeyCandidate, Source

__all__ = ["NOT_KEYABLE", "find_keys", "prefer_link_keys", "restore_found_keys"]

COMPOSITE_PENALTY = 0.15  # ranking cost of each extra key column
MAX_LEADING = 4  # widest leading key considered
SYNTHETIC = ("ordinal",)  # columns the readers add to flattened children: not data


def _distinct_rows(source: Source) -> int:
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
    distinct_rows = _distinct_rows(src)
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
        KeyCandidate(columns=cols, confidence=_pk_confidence(cols, score), reason=_pk_reason(src, cols, score))
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
    part = partitions.detect(con, info)
    if part:  # exported from a range-partitioned table: the key carries the partition column
        partitions.apply(src, part)


def _leading_key(con: duckdb.DuckDBPyConnection, info: TableInfo, distinct_rows: int) -> list[str] | None:
    """The shortest unique prefix of the columns, when it reads as a key: an identifier first,
    then identifiers or dates (history), all complete."""
    src = info.source
    cols = [c for c in src.columns if not (src.parent and c.name in SYNTHETIC)]
    first = cols[0]
    if not (complete(first) and keyable(first) and id_like_name(first.name)):
        return None
    if first.distinct_count == distinct_rows:
        return [first.name]
    prefix: list[Column] = [first]
    for col in cols[1:MAX_LEADING]:
        if not (complete(col) and (keyable(col) and id_like_name(col.name) or col.semantic_type in ("date", "timestamp"))):
            break
        prefix.append(col)
    if len(prefix) < 2:
        return None
    exprs = [f"count(DISTINCT ({', '.join(quote_ident(c.name) for c in prefix[:n])}))" for n in range(2, len(prefix) + 1)]
    counts = con.execute(f"SELECT {', '.join(exprs)} FROM {quote_ident(info.table)}").fetchone()
    for n, count in zip(range(2, len(prefix) + 1), counts, strict=True):
        if count == distinct_rows:
            return [c.name for c in prefix[:n]]
    return None


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


def _pk_confidence(cols: list[str], score: float) -> float:
    """Single keys from their score; composites from their weakest column, a little
    less for each extra column, never above 0.9."""
    extra = len(cols) - 1
    if not extra:
        return round(min(1.0, 0.6 + 0.4 * score), 2)
    weakest = score + COMPOSITE_PENALTY * extra
    return round(max(0.3, min(0.9, 0.5 + 0.4 * weakest - 0.05 * extra)), 2)


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


def prefer_link_keys(infos: list[TableInfo], fks: list[ForeignKey]) -> bool:
    """Relationship tables are keyed by their references, once the references are known.

    A table whose columns all reference other tables is a link table: its key is their
    combination, even when one of them happens to be unique. A key made only of leading
    references is a relationship, identified by the whole leading run of complete references
    (`entity_address(entity_id, address_id, address_type_id)`), not just by the shortest
    unique part of it."""
    changed = False
    for info in infos:
        src = info.source
        if not src.primary_key:
            continue
        pointing = {
            fk.from_.columns[0] for fk in fks
            if fk.from_.source == src.name and len(fk.from_.columns) == 1
            and fk.confidence >= HIGH and fk.to.source != src.name
        }
        key = src.primary_key.columns
        if len(key) == 1:
            cols = [c.name for c in src.columns if c.name in pointing]
            if not (2 <= len(cols) <= 3 and len(cols) == len(src.columns)):
                continue
            reason = "link table: every identifier column references another table, so the key is their combination"
        else:
            run = []
            for col in src.columns[:MAX_LEADING]:
                if col.name not in pointing or not complete(col):
                    break
                run.append(col.name)
            if len(run) <= len(key) or run[: len(key)] != key:
                continue
            cols = run
            reason = (f"relationship table: its key {key} is made of references, and the leading run of "
                      f"complete references {run} identifies the relationship")
        src.primary_key = KeyCandidate(columns=cols, confidence=0.8, reason=reason)
        src.candidate_keys.insert(0, src.primary_key)
        changed = True
    return changed
