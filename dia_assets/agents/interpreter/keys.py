"""Primary keys, foreign keys and join paths from values *and* names.

Value inclusion alone finds many coincidences among small integer keys, so every
foreign key needs name or structure evidence before it is called high confidence.
"""

from __future__ import annotations

import itertools
from collections import deque
from dataclasses import dataclass

import duckdb

from dia_assets.agents.interpreter.naming import quote_ident, singular
from dia_assets.agents.interpreter.semantic import id_like_name
from dia_assets.agents.value_parsing import parse_expression, present
from dia_assets.contracts.interpretation import (
    Column,
    ForeignKey,
    JoinPath,
    KeyCandidate,
    Source,
    SourceRef,
)

HIGH = 0.8
MIN_REPORTED = 0.5
COMPOSITE_PENALTY = 0.15  # ranking cost of each extra key column
NOT_KEYABLE = {"decimal", "currency", "percentage", "free_text", "json", "boolean",
               "latitude", "longitude", "timestamp", "time"}
HIERARCHY_WORDS = ("reports_to", "parent", "manager", "supervisor", "boss", "mentor", "lead")
INT_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
             "UINTEGER", "UBIGINT")


def keyable(col: Column) -> bool:
    return col.semantic_type not in NOT_KEYABLE and not col.inferred_type.startswith(("DECIMAL", "DOUBLE"))


def column_key_score(source: Source, col: Column) -> float:
    """How much a column looks like an identifier, in [0, 1]."""
    if not keyable(col):
        return 0.0
    if col.semantic_type in ("postal_code", "phone", "email", "country"):
        return 0.3
    if id_like_name(col.name):
        return 1.0
    return {"id": 0.8, "integer": 0.6, "email": 0.3}.get(col.semantic_type, 0.4)


def _complete(col: Column) -> bool:
    return col.null_count + col.blank_count + col.null_token_count == 0


@dataclass
class TableInfo:
    source: Source
    table: str


def _distinct_rows(source: Source) -> int:
    return source.row_count - source.duplicate_rows


def find_keys(con: duckdb.DuckDBPyConnection, info: TableInfo) -> None:
    """Fill `candidate_keys` and `primary_key` on the source."""
    src = info.source
    if not src.columns:
        return
    if src.row_count == 0:
        _keys_from_names(src)
        return
    distinct_rows = _distinct_rows(src)
    singles = []
    for position, col in enumerate(src.columns):
        if _complete(col) and col.distinct_count == distinct_rows and keyable(col):
            score = column_key_score(src, col) + (0.1 if position == 0 else 0.0)
            singles.append(([col.name], min(score, 1.0), position))
    best_single = max((s for _, s, _ in singles), default=0.0)
    composites = []
    if best_single < 0.6:
        pool = sorted(
            (c for c in src.columns if _complete(c) and column_key_score(src, c) > 0),
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
    near = _near_key(con, info, distinct_rows) if not ranked or ranked[0][1] < 0.6 else None
    if near:  # a nearly unique identifier beats a unique name or date
        src.candidate_keys.insert(0, near)
    if src.candidate_keys:
        src.primary_key = src.candidate_keys[0]


NEAR_UNIQUE = 0.98


def _near_key(con: duckdb.DuckDBPyConnection, info: TableInfo, distinct_rows: int) -> KeyCandidate | None:
    """An identifier with a few conflicting duplicates is still the key; the duplicates are a
    quality issue for the expert, not a reason to lose the key."""
    src = info.source
    for col in src.columns:
        if not (_complete(col) and id_like_name(col.name) and keyable(col)):
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


# ------------------------------------------------------------------ foreign keys


def _family(col: Column) -> str | None:
    t = col.inferred_type.upper()
    if t.startswith(INT_TYPES):
        return "int"
    if t == "VARCHAR" and keyable(col):
        return "text"
    return None  # dates, decimals, booleans: not compared as keys


def _key_sql(col: Column) -> str:
    ident = quote_ident(col.name)
    if col.physical_type.upper() in ("VARCHAR", "JSON"):
        value = present(ident)
        return parse_expression(value, "HUGEINT", col.value_format) if _family(col) == "int" else value
    return f"CAST({ident} AS HUGEINT)" if _family(col) == "int" else f"CAST({ident} AS VARCHAR)"


def name_score(child: Source, col: str, parent: Source, key: str) -> tuple[float, str]:
    """Name evidence that `child.col` refers to `parent.key`, with the reason."""
    generic = key in ("id", "code", "key", "name", "no")
    if child.name == parent.name:
        if any(w in col for w in HIERARCHY_WORDS):
            return 0.7, f"self-reference with hierarchy name {col!r}"
        return 0.0, ""
    if col == key and not generic:
        return 1.0, f"same column name {col!r}"
    tokens = parent.name.split("_")
    stems = {singular(t) for t in tokens} | {singular(parent.name)}
    for stem in stems:
        if col in (f"{stem}_{key}", f"{stem}_id" if key == "id" else ""):
            return 1.0, f"{col!r} names table {parent.name!r}"
    if not generic and col.endswith("_" + key):
        return 0.8, f"{col!r} is a role-prefixed {key!r}"
    key_stem = key.rsplit("_", 1)[0] if "_" in key else key
    for token in col.split("_"):
        if len(token) >= 4 and any(s.startswith(token) or token.startswith(s) for s in stems | {key_stem}):
            return 0.5, f"{col!r} shares the stem {token!r} with {parent.name}.{key}"
    return 0.0, ""


@dataclass
class _Target:
    source: Source
    table: str
    columns: list[Column]


def find_foreign_keys(con: duckdb.DuckDBPyConnection, infos: list[TableInfo]) -> list[ForeignKey]:
    targets: list[_Target] = []
    for info in infos:
        src = info.source
        if not src.primary_key:
            continue
        targets.append(_Target(src, info.table, [src.column(c) for c in src.primary_key.columns]))
        entity = len(src.primary_key.columns) == 1  # link tables only point, they are not pointed at
        for cand in src.candidate_keys[1:]:
            if entity and len(cand.columns) == 1 and column_key_score(src, src.column(cand.columns[0])) >= 0.8:
                targets.append(_Target(src, info.table, [src.column(cand.columns[0])]))
    found: list[ForeignKey] = []
    for info in infos:
        child = info.source
        own_pk = child.primary_key.columns if child.primary_key else []
        for target in targets:
            if len(target.columns) == 1:
                for col in child.columns:
                    fk = _single(con, info, col, target, own_pk)
                    if fk:
                        found.append(fk)
            elif target.source.name != child.name:
                fk = _composite(con, info, target)
                if fk:
                    found.append(fk)
    _promote_sole_candidates(found)
    found.sort(key=lambda f: (f.from_.source, f.from_.columns, -f.confidence))
    return found


def _single(
    con: duckdb.DuckDBPyConnection, info: TableInfo, col: Column, target: _Target, own_pk: list[str]
) -> ForeignKey | None:
    child, parent, key = info.source, target.source, target.columns[0]
    if child.name == parent.name and col.name == key.name:
        return None
    fam = _family(col)
    if fam is None or fam != _family(key) or not keyable(col):
        return None
    score, why = name_score(child, col.name, parent, key.name)
    structural = child.parent is not None and child.parent.source == parent.name and child.parent.columns == [col.name]
    if structural:
        score, why = 1.0, f"{child.name} is flattened from {parent.name}'s nested array"
    if own_pk == [col.name] and not (
        parent.primary_key and parent.primary_key.columns == [key.name]
        and col.name.startswith(singular(parent.name.split("_")[-1]) + "_")
    ):
        return None  # a table's own key points elsewhere only to the entity its name says
    if score == 0:
        # Value inclusion without name evidence scores below MIN_REPORTED whatever the data
        # says, so it is not worth a query.
        return None
    return _measure(con, info, [col], target, score, why, structural)


def _composite(con: duckdb.DuckDBPyConnection, info: TableInfo, target: _Target) -> ForeignKey | None:
    child = info.source
    names = {c.name: c for c in child.columns}
    if not all(k.name in names and _family(names[k.name]) == _family(k) for k in target.columns):
        return None
    cols = [names[k.name] for k in target.columns]
    if child.primary_key and child.primary_key.columns == [c.name for c in cols] and child.row_count <= target.source.row_count:
        return None
    return _measure(con, info, cols, target, 1.0, "same column names as the composite key", False)


def _measure(
    con: duckdb.DuckDBPyConnection, info: TableInfo, cols: list[Column], target: _Target,
    score: float, why: str, structural: bool,
) -> ForeignKey | None:
    child, parent = info.source, target.source
    cexpr = ", ".join(f"{_key_sql(c)} AS k{i}" for i, c in enumerate(cols))
    pexpr = ", ".join(f"{_key_sql(k)} AS k{i}" for i, k in enumerate(target.columns))
    on = " AND ".join(f"c.k{i} = p.k{i}" for i in range(len(cols)))
    notnull = " AND ".join(f"k{i} IS NOT NULL" for i in range(len(cols)))
    c_distinct, c_covered, orphan_rows, examples = _coverage(
        con, info.table, cexpr, target.table, pexpr, on, notnull, len(cols)
    )
    empty = child.row_count == 0
    if c_distinct == 0 and not empty:
        return None
    coverage = 1.0 if c_distinct == 0 else c_covered / c_distinct
    if coverage < (0.5 if score >= 0.8 else 0.9):
        return None
    if score == 0 and coverage < 1.0:
        return None
    evidence = [why] if why else []
    if empty:
        if score < 0.8:
            return None
        evidence.append("child table has no rows: name evidence only")
        confidence = 0.85 if score >= 1.0 else 0.4 * score
    else:
        evidence.append(f"{c_covered}/{c_distinct} distinct values found in {parent.name}")
        distinctive = 1.0 if _family(cols[0]) == "text" else (0.5 if target.columns[0].distinct_count >= 50 else 0.0)
        confidence = 0.35 * coverage + 0.55 * score + 0.1 * distinctive
        if structural:
            confidence = 1.0
    if confidence < MIN_REPORTED:
        return None  # value inclusion without name evidence: coincidence among small ids
    if orphan_rows:
        evidence.append(f"{orphan_rows} orphan row(s)")
    return ForeignKey.model_validate({
        "from": SourceRef(source=child.name, columns=[c.name for c in cols]),
        "to": SourceRef(source=parent.name, columns=[k.name for k in target.columns]),
        "coverage": round(coverage, 4), "orphan_count": orphan_rows,
        "orphan_examples": [str(e) for e in (examples or [])],
        "confidence": round(min(1.0, confidence), 2), "evidence": evidence,
    })


def _coverage(
    con: duckdb.DuckDBPyConnection, child_table: str, cexpr: str, parent_table: str, pexpr: str,
    on: str, notnull: str, width: int,
) -> tuple[int, int, int, list[str]]:
    keys = ", ".join(f"c.k{i}" for i in range(width))
    return con.execute(
        f"WITH cv AS (SELECT * FROM (SELECT {cexpr} FROM {quote_ident(child_table)}) WHERE {notnull}), "
        f"p AS (SELECT DISTINCT {pexpr} FROM {quote_ident(parent_table)}), "
        f"j AS (SELECT {keys}, p.k0 IS NOT NULL AS hit FROM cv c LEFT JOIN p ON {on}) "
        f"SELECT (SELECT count(*) FROM (SELECT DISTINCT * EXCLUDE (hit) FROM j)), "
        f"(SELECT count(*) FROM (SELECT DISTINCT * EXCLUDE (hit) FROM j WHERE hit)), "
        f"(SELECT count(*) FROM j WHERE NOT hit), "
        f"(SELECT list(DISTINCT CAST(k0 AS VARCHAR) ORDER BY CAST(k0 AS VARCHAR))[1:5] FROM j WHERE NOT hit)"
    ).fetchone()


def _promote_sole_candidates(found: list[ForeignKey]) -> None:
    """A column whose only name-backed parent covers it fully is a foreign key with some confidence."""
    by_column: dict[tuple[str, tuple[str, ...]], list[ForeignKey]] = {}
    for fk in found:
        by_column.setdefault((fk.from_.source, tuple(fk.from_.columns)), []).append(fk)
    for fks in by_column.values():
        named = [f for f in fks if f.evidence and not f.evidence[0].endswith("distinct values found in " + f.to.source)
                 and "found in" not in f.evidence[0]]
        if len(named) == 1 and named[0].coverage == 1.0 and named[0].confidence < HIGH:
            named[0].confidence = HIGH
            named[0].evidence.append("the only parent with name evidence, and it covers every value")
        # A column with a stronger name-backed parent keeps only that one high.
        best = max(fks, key=lambda f: f.confidence)
        for f in fks:
            if f is not best and f.confidence >= HIGH and best.confidence > f.confidence:
                f.confidence = round(HIGH - 0.05, 2)


def prefer_link_keys(infos: list[TableInfo], fks: list[ForeignKey]) -> bool:
    """A table whose columns all reference other tables is a link table: its key is
    their combination, even when one of them happens to be unique."""
    changed = False
    for info in infos:
        src = info.source
        if not src.primary_key or len(src.primary_key.columns) != 1:
            continue
        pointing = {
            fk.from_.columns[0] for fk in fks
            if fk.from_.source == src.name and len(fk.from_.columns) == 1
            and fk.confidence >= HIGH and fk.to.source != src.name
        }
        cols = [c.name for c in src.columns if c.name in pointing]
        if 2 <= len(cols) <= 3 and len(cols) == len(src.columns):
            src.primary_key = KeyCandidate(
                columns=cols, confidence=0.8,
                reason="link table: every identifier column references another table, "
                "so the key is their combination",
            )
            src.candidate_keys.insert(0, src.primary_key)
            changed = True
    return changed


def join_paths(sources: list[Source], fks: list[ForeignKey], min_confidence: float = 0.5) -> list[JoinPath]:
    """Shortest foreign-key path between every pair of related sources."""
    best: dict[frozenset[str], ForeignKey] = {}
    for fk in fks:  # between two tables, join on the strongest relationship
        pair = frozenset((fk.from_.source, fk.to.source))
        if fk.confidence >= min_confidence and len(pair) == 2 and (
            pair not in best or fk.confidence > best[pair].confidence
        ):
            best[pair] = fk
    graph: dict[str, list[tuple[str, str]]] = {s.name: [] for s in sources}
    for fk in sorted(best.values(), key=lambda f: (f.from_.source, f.to.source)):
        cond = " AND ".join(
            f"{fk.from_.source}.{a} = {fk.to.source}.{b}"
            for a, b in zip(fk.from_.columns, fk.to.columns, strict=True)
        )
        graph[fk.from_.source].append((fk.to.source, cond))
        graph[fk.to.source].append((fk.from_.source, cond))
    paths = []
    names = sorted(graph)
    for start in names:
        prev: dict[str, tuple[str, str] | None] = {start: None}
        queue = deque([start])
        while queue:
            node = queue.popleft()
            for nxt, cond in graph[node]:
                if nxt not in prev:
                    prev[nxt] = (node, cond)
                    queue.append(nxt)
        for end in names:
            if end <= start or end not in prev:
                continue
            hops, node = [], end
            while prev[node] is not None:
                parent, cond = prev[node]  # type: ignore[misc]
                hops.append((node, cond))
                node = parent
            hops.reverse()
            paths.append(JoinPath(sources=[start] + [h[0] for h in hops], joins=[h[1] for h in hops]))
    return paths
