"""Foreign keys: candidates measured on the data, then one parent per column for the schema
as a whole.

Local step (Auto-BI's "local join prediction"): every child column that names a parent key,
or is a hierarchy column, is measured against that key. A candidate has three features:

    name      name evidence in [0, 1]: 1.0 same column name or the column names the parent
              table; 0.8 role-prefixed key (`ship_to_address_id`), head-noun match, or the
              same name as a column elsewhere that already references the parent; 0.7 a
              hierarchy self-reference (`manager_id`, `reports_to`); 0.5 a shared stem
    coverage  share of the child's distinct values found in the parent key
    distinct  1 when shared values are distinctive (text, or integer keys over >= 50 values)

    confidence = 0.35 * coverage + 0.55 * name + 0.10 * distinct

Value inclusion without a name never makes a foreign key: small integer keys overlap by
coincidence. Targets are primary keys and identifier-like unique columns, never an ordinary
column that happens to be unique (`last_name`).

Global step (the schema-graph optimisation, kept simple): each child column keeps one parent,
the best by (confidence, parent key is a primary key, most specific parent: fewest rows that
still cover the values). Other candidates stay in the list below HIGH as alternatives for the
reviewer. A column named like a key that found no parent takes the parent of a same-named
column elsewhere when the data agrees (`departments.manager_id` like `employees.manager_id`).

Strength: a key is `strong` when its name evidence is exact (same name, names the table,
declared, or structural); anything else is `weak`. The Schema Creator blocks acceptance only on
strong keys the data contradicts; weak ones are reported for review.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from dia_assets.agents.interpreter.naming import quote_ident, singular
from dia_assets.agents.interpreter.semantic import id_like_name
from dia_assets.agents.interpreter.table_info import (
    HIGH,
    INT_TYPES,
    TableInfo,
    column_key_score,
    keyable,
)
from dia_assets.agents.value_parsing import parse_expression, present
from dia_assets.contracts.interpretation import Column, ForeignKey, Source, SourceRef

MIN_REPORTED = 0.5
MIN_PARENT_SHARE = 0.1  # share of parent keys a stem-only reference must reach
ALTERNATIVE_CAP = round(HIGH - 0.05, 2)  # a column's second-best parent stays below HIGH
HIERARCHY_WORDS = ("reports_to", "parent", "manager", "supervisor", "boss", "mentor", "lead")
GENERIC_KEYS = ("id", "code", "key", "name", "no")


@dataclass
class Target:
    info: TableInfo
    columns: list[Column]
    is_primary: bool

    @property
    def source(self) -> Source:
        return self.info.source

    @property
    def table(self) -> str:  # read on first use (see TableInfo)
        return self.info.table


@dataclass
class Candidate:
    fk: ForeignKey
    name: float
    parent_rows: int
    is_primary: bool


# ------------------------------------------------------------------ features


def family(col: Column) -> str | None:
    """Comparable key domain; None for dates, decimals, booleans."""
    if _all_null(col):
        return "any"
    t = col.inferred_type.upper()
    if t.startswith(INT_TYPES):
        return "int"
    if t == "VARCHAR" and keyable(col):
        return "text"
    return None


def _all_null(col: Column) -> bool:
    return col.distinct_count == 0 and col.null_fraction >= 1.0


def _compatible(child: Column, key: Column) -> bool:
    a, b = family(child), family(key)
    return a is not None and b is not None and (a == b or a == "any")


def name_score(child: Source, col: str, parent: Source, key: str) -> tuple[float, str]:
    """Name evidence that `child.col` refers to `parent.key`, with the reason."""
    generic = key in GENERIC_KEYS
    tokens = parent.name.split("_")
    full = singular(parent.name)
    head = singular(tokens[-1])
    suffix = col.rsplit("_", 1)[-1] if "_" in col else ""
    if child.name == parent.name:
        if any(w in col for w in HIERARCHY_WORDS):
            return 0.7, f"self-reference with hierarchy name {col!r}"
        if not generic and col.endswith((f"_{key}", f"_{head}_{suffix}")) and id_like_name(col):
            return 0.7, f"self-reference: {col!r} is a role-prefixed {key!r}"
        return 0.0, ""
    if col == key and not generic:
        return 1.0, f"same column name {col!r}"
    if id_like_name(col) and suffix and col == f"{full}_{suffix}" and (
        suffix == key.rsplit("_", 1)[-1] or key in GENERIC_KEYS or id_like_name(key)
    ):
        return 1.0, f"{col!r} names table {parent.name!r}"
    if not generic and col.endswith("_" + key):
        return 0.8, f"{col!r} is a role-prefixed {key!r}"
    if len(tokens) > 1 and id_like_name(col) and col == f"{head}_{suffix}":
        return 0.8, f"{col!r} names {parent.name!r} by its head noun"
    if id_like_name(col) and suffix and col.endswith((f"_{full}_{suffix}", f"_{head}_{suffix}")):
        return 0.8, f"{col!r} is a role-prefixed reference to {parent.name!r}"
    stems = {singular(t) for t in tokens} | {full, key.rsplit("_", 1)[0] if "_" in key else key}
    for token in col.split("_"):
        if len(token) >= 4 and any(s.startswith(token) or token.startswith(s) for s in stems):
            return 0.5, f"{col!r} shares the stem {token!r} with {parent.name}.{key}"
    return 0.0, ""


def _key_sql(col: Column) -> str:
    ident = quote_ident(col.name)
    fam = family(col)
    if col.physical_type.upper() in ("VARCHAR", "JSON"):
        value = present(ident)
        return parse_expression(value, "HUGEINT", col.value_format) if fam == "int" else value
    return f"CAST({ident} AS HUGEINT)" if fam == "int" else f"CAST({ident} AS VARCHAR)"


# ------------------------------------------------------------------ targets and candidates


def targets(infos: list[TableInfo]) -> list[Target]:
    """Primary keys, plus identifier-like unique columns of entity tables (those that turn out
    to reference another table are dropped later: they copy the key they point at)."""
    out: list[Target] = []
    for info in infos:
        src = info.source
        if not src.primary_key:
            continue
        out.append(Target(info, [src.column(c) for c in src.primary_key.columns], True))
        if src.range_partition:  # the key without its partition column identifies the rows
            out.append(Target(info, [src.column(c) for c in src.range_partition.unique_key], True))
        if len(src.primary_key.columns) != 1:
            continue  # link and dependent tables point; they are not pointed at by other keys
        for cand in src.candidate_keys:
            if len(cand.columns) != 1 or cand.columns == src.primary_key.columns:
                continue
            col = src.column(cand.columns[0])
            if id_like_name(col.name) and column_key_score(src, col) >= 0.8:
                out.append(Target(info, [col], False))
    return out


def find_foreign_keys(con: duckdb.DuckDBPyConnection, infos: list[TableInfo]) -> list[ForeignKey]:
    """Every measured candidate; exactly one parent per child column at HIGH or above."""
    cands = _candidates(con, infos, targets(infos))
    # A unique column that references another table is a copy of that key, not a target.
    copies = {(g[0].fk.from_.source, g[0].fk.from_.columns[0]) for g in _groups(cands)
              if len(g[0].fk.from_.columns) == 1 and _final(g[0], g) >= HIGH}
    cands = [c for c in cands if c.is_primary or (c.fk.to.source, c.fk.to.columns[0]) not in copies]
    cands += _propagate(con, infos, _groups(cands))
    for group in _groups(cands):
        best = group[0]
        for c in group:
            confidence = _final(c, group)
            if confidence > c.fk.confidence:
                c.fk.evidence.append("the only parent with name evidence, and it covers every value")
            elif confidence < c.fk.confidence:
                c.fk.evidence.append(f"a better parent exists: {best.fk.to.source}.{'/'.join(best.fk.to.columns)}")
            c.fk.confidence = confidence
    found = [c.fk for c in cands]
    found.sort(key=lambda f: (f.from_.source, f.from_.columns, -f.confidence))
    return found


def _candidates(con: duckdb.DuckDBPyConnection, infos: list[TableInfo], tgts: list[Target]) -> list[Candidate]:
    out: list[Candidate] = []
    for info in infos:
        for target in tgts:
            if len(target.columns) == 1:
                for col in info.source.columns:
                    score, why = name_score(info.source, col.name, target.source, target.columns[0].name)
                    cand = _single(con, info, col, target, score, why)
                    if cand:
                        out.append(cand)
            elif target.source.name != info.source.name:
                cand = _composite(con, info, target)
                if cand:
                    out.append(cand)
    return out


def _single(
    con: duckdb.DuckDBPyConnection, info: TableInfo, col: Column, target: Target, score: float, why: str,
) -> Candidate | None:
    child, parent, key = info.source, target.source, target.columns[0]
    if child.name == parent.name and col.name == key.name:
        return None
    if not _compatible(col, key) or not (keyable(col) or _all_null(col)):
        return None
    structural = child.parent is not None and child.parent.source == parent.name and child.parent.columns == [col.name]
    if structural:
        score, why = 1.0, f"{child.name} is flattened from {parent.name}'s nested array"
    own_pk = child.primary_key.columns if child.primary_key else []
    if child.range_partition:  # its identifier is the key without the partition column
        own_pk = child.range_partition.unique_key
    if own_pk == [col.name] and not _subtype(child, col.name, parent, target, score):
        return None
    if score == 0:
        return None  # value inclusion alone scores below MIN_REPORTED: not worth a query
    # A shared stem on a column not named like a key (`ship_via`, `rental_duration`) counts
    # only when the values spread over the parent's keys, not into a corner of them.
    spread = MIN_PARENT_SHARE if score < 0.8 and not id_like_name(col.name) else 0.0
    return _measure(con, info, [col], target, score, why, structural, spread)


def _subtype(child: Source, col: str, parent: Source, target: Target, score: float) -> bool:
    """A table's own key references another table's primary key only as a subtype or
    extension: the name says so and the parent has more rows, or as many when the column
    names the parent (`employee.person_id -> person`). Two same-sized tables sharing a key
    name are not each other's parents."""
    if not target.is_primary or score < 0.8:
        return False
    return parent.row_count > child.row_count or (
        parent.row_count == child.row_count and col.startswith(singular(parent.name) + "_"))


def _composite(con: duckdb.DuckDBPyConnection, info: TableInfo, target: Target) -> Candidate | None:
    child = info.source
    names = {c.name: c for c in child.columns}
    if not all(k.name in names and _compatible(names[k.name], k) for k in target.columns):
        return None
    cols = [names[k.name] for k in target.columns]
    if child.primary_key and child.primary_key.columns == [c.name for c in cols] and child.row_count <= target.source.row_count:
        return None
    return _measure(con, info, cols, target, 1.0, "same column names as the composite key", False)


def _measure(
    con: duckdb.DuckDBPyConnection, info: TableInfo, cols: list[Column], target: Target,
    score: float, why: str, structural: bool, min_parent_share: float = 0.0,
) -> Candidate | None:
    child, parent = info.source, target.source
    evidence = [why] if why else []
    if child.row_count == 0 or all(_all_null(c) for c in cols):
        if score < 0.8:
            return None
        evidence.append("child table has no rows: name evidence only" if child.row_count == 0
                        else "every value is NULL: name evidence only")
        coverage, orphan_rows, examples, confidence = 1.0, 0, [], (0.85 if score >= 1.0 else 0.8)
    else:
        c_distinct, c_covered, orphan_rows, examples = _coverage(con, info.table, cols, target)
        if c_distinct == 0:
            return None
        coverage = c_covered / c_distinct
        if coverage < (0.5 if score >= 0.8 else 0.9):
            return None
        if c_covered < min_parent_share * max(1, target.columns[0].distinct_count):
            return None
        evidence.append(f"{c_covered}/{c_distinct} distinct values found in {parent.name}")
        distinctive = 1.0 if family(cols[0]) == "text" else (0.5 if target.columns[0].distinct_count >= 50 else 0.0)
        confidence = 1.0 if structural else 0.35 * coverage + 0.55 * score + 0.1 * distinctive
    if confidence < MIN_REPORTED:
        return None
    if orphan_rows:
        evidence.append(f"{orphan_rows} orphan row(s)")
    fk = ForeignKey.model_validate({
        "from": SourceRef(source=child.name, columns=[c.name for c in cols]),
        "to": SourceRef(source=parent.name, columns=[k.name for k in target.columns]),
        "coverage": round(coverage, 4), "orphan_count": orphan_rows,
        "orphan_examples": [str(e) for e in (examples or [])],
        "confidence": round(min(1.0, confidence), 2), "evidence": evidence,
        "strength": "strong" if score >= 1.0 else "weak",
    })
    return Candidate(fk, score, parent.row_count, target.is_primary)


def _coverage(
    con: duckdb.DuckDBPyConnection, child_table: str, cols: list[Column], target: Target,
) -> tuple[int, int, int, list[str]]:
    cexpr = ", ".join(f"{_key_sql(c)} AS k{i}" for i, c in enumerate(cols))
    pexpr = ", ".join(f"{_key_sql(k)} AS k{i}" for i, k in enumerate(target.columns))
    on = " AND ".join(f"c.k{i} = p.k{i}" for i in range(len(cols)))
    notnull = " AND ".join(f"k{i} IS NOT NULL" for i in range(len(cols)))
    keys = ", ".join(f"c.k{i}" for i in range(len(cols)))
    return con.execute(
        f"WITH cv AS (SELECT * FROM (SELECT {cexpr} FROM {quote_ident(child_table)}) WHERE {notnull}), "
        f"p AS (SELECT DISTINCT {pexpr} FROM {quote_ident(target.table)}), "
        f"j AS (SELECT {keys}, p.k0 IS NOT NULL AS hit FROM cv c LEFT JOIN p ON {on}) "
        f"SELECT (SELECT count(*) FROM (SELECT DISTINCT * EXCLUDE (hit) FROM j)), "
        f"(SELECT count(*) FROM (SELECT DISTINCT * EXCLUDE (hit) FROM j WHERE hit)), "
        f"(SELECT count(*) FROM j WHERE NOT hit), "
        f"(SELECT list(DISTINCT CAST(k0 AS VARCHAR) ORDER BY CAST(k0 AS VARCHAR))[1:5] FROM j WHERE NOT hit)"
    ).fetchone()


# ------------------------------------------------------------------ global assignment


def _rank(c: Candidate) -> tuple[float, bool, float, int]:
    return (round(c.fk.confidence, 2), c.is_primary, c.name, -c.parent_rows)


def _groups(cands: list[Candidate]) -> list[list[Candidate]]:
    """Candidates per child column set, best parent first (by `_rank`)."""
    groups: dict[tuple[str, tuple[str, ...]], list[Candidate]] = {}
    for c in cands:
        groups.setdefault((c.fk.from_.source, tuple(c.fk.from_.columns)), []).append(c)
    return [sorted(g, key=_rank, reverse=True) for g in groups.values()]


def _final(c: Candidate, group: list[Candidate]) -> float:
    """Confidence after assignment: the best parent is raised to HIGH when it is its column's
    only parent with name evidence and covers every value; any other parent stays below HIGH."""
    if c is not group[0]:
        return min(c.fk.confidence, ALTERNATIVE_CAP)
    if c.fk.confidence < HIGH and c.name >= 0.5 and c.fk.coverage == 1.0 and not any(
        other.name >= 0.5 for other in group[1:]
    ):
        return HIGH
    return c.fk.confidence


def _propagate(
    con: duckdb.DuckDBPyConnection, infos: list[TableInfo], groups: list[list[Candidate]],
) -> list[Candidate]:
    """A key-named column with no parent takes the parent of a same-named column elsewhere
    (`departments.manager_id` as `employees.manager_id -> employees`), if the values agree."""
    placed = {(g[0].fk.from_.source, g[0].fk.from_.columns[0]): g[0] for g in groups
              if len(g[0].fk.from_.columns) == 1 and _final(g[0], g) >= HIGH}
    by_name: dict[str, Candidate] = {}
    for (_, column), c in sorted(placed.items()):
        by_name.setdefault(column, c)
    tables = {i.source.name: i for i in infos}
    out = []
    for info in infos:
        for col in info.source.columns:
            model = by_name.get(col.name)
            if (model is None or (info.source.name, col.name) in placed or not id_like_name(col.name)
                    or model.fk.from_.source == info.source.name or col.name in GENERIC_KEYS):
                continue
            parent = tables[model.fk.to.source]
            target = Target(parent, [parent.source.column(model.fk.to.columns[0])], model.is_primary)
            why = (f"same name as {model.fk.from_.source}.{col.name}, which references "
                   f"{parent.source.name}.{model.fk.to.columns[0]}")
            cand = _single(con, info, col, target, 0.8, why)
            if cand:
                out.append(cand)
    return out
