"""Foreign keys: candidates measured on the data, scored one by one, then chosen for the schema
as a whole (after Auto-BI: a local join classifier, then a global assignment over the schema graph).

Local step. Every child column whose name says something about a parent key (`key_names`) is
measured against that key: the share of its distinct values found there (`coverage`), the share of
the parent's keys it uses, where its values lie in the parent's range. Composite references are
column tuples whose names match a composite key column by column. Each candidate gets a score, a
sum of documented terms (`score_terms`), turned into a confidence in [0, 1] by the logistic
function:

    name      6 * name evidence - 2       same name or names the table +4, role +2.8, stem +0.4
    coverage  1 - 8 * the share of distinct values not found (all found +1, 0.9 -> +0.2, 0.8 -> -0.6)
    values    text keys +1; integer keys that spread over the parent +0.5; integers in a corner
              of a large key range (a small count or size among sequence numbers) -3 per missing
              unit of name evidence, at most -1.5 (a reference named exactly may use few keys); values
              that also fit the keys of two or more other parents -0.5
    bias      -2.5

Value inclusion without any name evidence never makes a foreign key: small integers fit every
sequence key. Targets are primary keys and identifier-named unique columns (a surrogate key
beside a business key), never an ordinary column that happens to be unique (`last_name`).

Global step (`assign`): each child column set keeps its best parent (by confidence, then name,
then the most specific parent that still covers its values, then a primary-key target); the
others stay below HIGH as alternatives for the reviewer. A composite reference replaces the
single-column references it implies (`lineitem(partkey, suppkey) -> partsupp` implies
`lineitem.partkey -> part` through `partsupp.partkey -> part`). Of two tables that share one key
(1:1), the extension refers to its base, never both ways. A key-named column with no parent takes
the parent of a same-named column elsewhere when the data agrees (`departments.manager_id`).

Strength: `strong` when the name evidence is exact (same name or names the table), declared or
structural; anything else is `weak`. The Schema Creator blocks acceptance only on strong keys the
data contradicts; weak ones are reported for review.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import duckdb

from dia_assets.agents.interpreter.table_info import (
    INT_TYPES,
    TableInfo,
    keyable,
)
from dia_assets.agents.value_parsing import parse_expression, present
from dia_assets.contracts.interpretation import Column, ForeignKey, Source, SourceRef
from dia_assets.contracts.policy import HIGH, REPORTED
from dia_assets.platform.key_names import NameEvidence, SchemaNames, extension_of, id_like
from dia_assets.platform.naming import quote_ident

ALTERNATIVE_CAP = round(HIGH - 0.05, 2)  # a column's second-best parent stays below HIGH
MIN_NAME = 0.4  # name evidence a candidate needs before it is measured
COMPOSITE_COVERAGE = 0.95  # a column tuple must be found almost whole: pairs coincide rarely, but they do
CORNER = 0.1  # integer values below this share of the parent's range sit in a corner of it


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
class Measure:
    """What the data says about a child column set against a parent key."""

    distinct: int  # distinct child values (tuples)
    covered: int  # of them found in the parent
    orphan_rows: int
    examples: list[str]
    child_max: float | None = None  # integer keys: the largest child value
    parent_max: float | None = None

    @property
    def coverage(self) -> float:
        return self.covered / self.distinct if self.distinct else 1.0


@dataclass
class Candidate:
    fk: ForeignKey
    name: NameEvidence
    target: Target
    measure: Measure | None  # None: no rows to measure (name evidence only)
    terms: dict[str, float] = field(default_factory=dict)

    @property
    def parent_rows(self) -> int:
        return self.target.source.row_count

    @property
    def child(self) -> tuple[str, tuple[str, ...]]:
        return self.fk.from_.source, tuple(self.fk.from_.columns)

    @property
    def parent(self) -> tuple[str, tuple[str, ...]]:
        return self.fk.to.source, tuple(self.fk.to.columns)


# ------------------------------------------------------------------ value features


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


def _key_sql(col: Column) -> str:
    ident = quote_ident(col.name)
    fam = family(col)
    if col.physical_type.upper() in ("VARCHAR", "JSON"):
        value = present(ident)
        return parse_expression(value, "HUGEINT", col.value_format) if fam == "int" else value
    return f"CAST({ident} AS HUGEINT)" if fam == "int" else f"CAST({ident} AS VARCHAR)"


# ------------------------------------------------------------------ targets


def targets(infos: list[TableInfo]) -> list[Target]:
    """Primary keys, plus identifier-named unique columns of tables keyed by one column (a
    surrogate key beside a business key: either may be the one other tables use)."""
    out: list[Target] = []
    for info in infos:
        src = info.source
        if not src.primary_key:
            continue
        out.append(Target(info, [src.column(c) for c in src.primary_key.columns], True))
        if len(src.primary_key.columns) != 1:
            continue  # link and dependent tables are pointed at by their whole key only
        for cand in src.candidate_keys:
            if len(cand.columns) != 1 or cand.columns == src.primary_key.columns:
                continue
            col = src.column(cand.columns[0])
            if id_like(col.name) and keyable(col) and col.semantic_type not in ("email", "phone", "url"):
                out.append(Target(info, [col], False))
    return out


# ------------------------------------------------------------------ the whole step


class Finder:
    """Finds foreign keys over a set of sources; measurements are kept, so running it again
    after primary keys changed (`keys.revise_keys`) queries only what is new."""

    def __init__(self, con: duckdb.DuckDBPyConnection, infos: list[TableInfo],
                 apart: set[frozenset[str]] | None = None) -> None:
        """`apart`: pairs of sources that are files of one table (`one_table.py`): no key between them."""
        self.con, self.infos, self.apart = con, infos, apart or set()
        self.names = SchemaNames([i.source for i in infos])
        self._measured: dict[tuple, Measure] = {}

    def find(self) -> list[ForeignKey]:
        """Every candidate worth reporting; exactly one parent per child column set at HIGH or above."""
        tgts = targets(self.infos)
        cands = self._candidates(tgts)
        _score(cands)
        cands += self._propagate(assign(cands, self.names))
        _score(cands)
        assign(cands, self.names)
        found = [c.fk for c in cands if c.fk.confidence >= REPORTED]
        found.sort(key=lambda f: (f.from_.source, f.from_.columns, -f.confidence, f.to.source, f.to.columns))
        return found

    # -------------------------------------------------------------- candidates

    def _candidates(self, tgts: list[Target]) -> list[Candidate]:
        out: list[Candidate] = []
        for info in self.infos:
            for target in tgts:
                if len(target.columns) == 1:
                    for col in info.source.columns:
                        cand = self._single(info, col, target)
                        if cand:
                            out.append(cand)
                elif target.source.name != info.source.name:
                    cand = self._composite(info, target)
                    if cand:
                        out.append(cand)
        return out

    def _single(self, info: TableInfo, col: Column, target: Target, name: NameEvidence | None = None) -> Candidate | None:
        child, parent, key = info.source, target.source, target.columns[0]
        if child.name == parent.name and col.name == key.name:
            return None
        if not _compatible(col, key) or not (keyable(col) or _all_null(col)):
            return None
        structural = child.parent is not None and child.parent.source == parent.name and child.parent.columns == [col.name]
        if structural:
            name = NameEvidence("same", 1.0, f"{child.name} is flattened from {parent.name}'s nested array")
        elif name is None:
            name = self.names.evidence(child.name, col.name, parent.name, key.name)
        if name.score < MIN_NAME:
            return None
        own_pk = child.primary_key.columns if child.primary_key else []
        if own_pk == [col.name] and not (structural or self._extends(child, col, target, name)):
            return None
        return self._candidate(info, [col], target, name, structural)

    def _extends(self, child: Source, col: Column, target: Target, name: NameEvidence) -> bool:
        """A table's own key refers to another table's primary key only as a 1:1 extension or a
        subtype: the names agree and the parent has at least as many rows."""
        return target.is_primary and name.score >= 0.8 and target.source.row_count >= child.row_count

    def _composite(self, info: TableInfo, target: Target) -> Candidate | None:
        """Child columns that match a composite key column by column, by name."""
        child = info.source
        cols: list[Column] = []
        evidence: list[NameEvidence] = []
        for key in target.columns:
            best: tuple[float, Column | None, NameEvidence | None] = (0.0, None, None)
            for col in child.columns:
                if col in cols or not _compatible(col, key):
                    continue
                ev = self.names.evidence(child.name, col.name, target.source.name, key.name)
                if ev.score > best[0]:
                    best = (ev.score, col, ev)
            if best[1] is None or best[0] < 0.8:
                return None
            cols.append(best[1])
            evidence.append(best[2])
        if child.primary_key and child.primary_key.columns == [c.name for c in cols] and (
                child.row_count <= target.source.row_count):
            return None
        weakest = min(evidence, key=lambda e: e.score)
        name = NameEvidence(weakest.level, weakest.score, "column by column: " + "; ".join(e.reason for e in evidence))
        return self._candidate(info, cols, target, name, False)

    def _candidate(self, info: TableInfo, cols: list[Column], target: Target, name: NameEvidence,
                   structural: bool) -> Candidate | None:
        child, parent = info.source, target.source
        if frozenset((child.name, parent.name)) in self.apart:
            return None
        evidence = [name.reason] if name.reason else []
        measure = None
        if child.row_count == 0 or all(_all_null(c) for c in cols):
            if name.score < 0.8:
                return None
            evidence.append("child table has no rows: name evidence only" if child.row_count == 0
                            else "every value is NULL: name evidence only")
        else:
            measure = self._measure(info, cols, target)
            least = COMPOSITE_COVERAGE if len(cols) > 1 else 0.5 if name.score >= 0.8 else 0.9
            if measure.distinct == 0 or measure.coverage < least:
                return None
            evidence.append(f"{measure.covered}/{measure.distinct} distinct values found in {parent.name}")
            if measure.orphan_rows:
                evidence.append(f"{measure.orphan_rows} orphan row(s)")
        fk = ForeignKey.model_validate({
            "from": SourceRef(source=child.name, columns=[c.name for c in cols]),
            "to": SourceRef(source=parent.name, columns=[k.name for k in target.columns]),
            "coverage": round(measure.coverage, 4) if measure else 1.0,
            "orphan_count": measure.orphan_rows if measure else 0,
            "orphan_examples": [str(e) for e in measure.examples] if measure else [],
            "confidence": 1.0 if structural else 0.0, "evidence": evidence,
            "strength": "strong" if structural or name.strong else "weak",
        })
        return Candidate(fk, name, target, measure, {"structural": 1.0} if structural else {})

    def _measure(self, info: TableInfo, cols: list[Column], target: Target) -> Measure:
        key = (info.source.name, tuple(c.name for c in cols), target.source.name, tuple(k.name for k in target.columns))
        if key not in self._measured:
            self._measured[key] = _coverage(self.con, info.table, cols, target)
        return self._measured[key]

    # -------------------------------------------------------------- propagation

    def _propagate(self, chosen: list[Candidate]) -> list[Candidate]:
        """A key-named column with no parent takes the parent of a same-named column elsewhere
        (`departments.manager_id` as `employees.manager_id -> employees`), if the values agree."""
        placed = {c.child: c for c in chosen if len(c.fk.from_.columns) == 1}
        by_name: dict[str, Candidate] = {}
        for (_, (column,)), c in sorted(placed.items()):
            by_name.setdefault(column, c)
        out = []
        for info in self.infos:
            for col in info.source.columns:
                model = by_name.get(col.name)
                if (model is None or (info.source.name, (col.name,)) in placed or not id_like(col.name)
                        or model.fk.from_.source == info.source.name or col.name in ("id", "code", "key")):
                    continue
                why = (f"same name as {model.fk.from_.source}.{col.name}, which references "
                       f"{model.fk.to.source}.{model.fk.to.columns[0]}")
                cand = self._single(info, col, model.target, NameEvidence("role", 0.8, why))
                if cand:
                    out.append(cand)
        return out


def find_foreign_keys(con: duckdb.DuckDBPyConnection, infos: list[TableInfo]) -> list[ForeignKey]:
    return Finder(con, infos).find()


# ------------------------------------------------------------------ local score


def score_terms(c: Candidate, ambiguity: int) -> dict[str, float]:
    """The documented terms of a candidate's score (module docstring). `ambiguity`: how many
    other parents' keys also hold every value of the child column."""
    terms = {"bias": -2.5, "name": 6 * c.name.score - 2}
    m = c.measure
    if m is None:
        return terms
    terms["coverage"] = 1.0 - 8 * (1 - m.coverage)
    terms["values"] = _value_term(c)
    if ambiguity >= 2:
        terms["ambiguous"] = -0.5
    return terms


def _value_term(c: Candidate) -> float:
    m = c.measure
    key = c.target.columns[0]
    if family(key) == "text":
        return 1.0 if m.distinct >= 3 else 0.3
    if m.child_max is None or m.parent_max is None or m.parent_max <= 0:
        return 0.0
    parent_keys = max(1, key.distinct_count)
    if m.child_max < CORNER * m.parent_max and m.covered < CORNER * parent_keys:
        return max(-1.5, -3 * (1 - c.name.score))  # a small count or size among sequence numbers
    return 0.5 if parent_keys >= 50 or m.covered >= 0.5 * parent_keys else 0.0


def _score(cands: list[Candidate]) -> None:
    fits: dict[tuple[str, tuple[str, ...]], int] = {}
    named: dict[tuple[str, tuple[str, ...]], int] = {}
    for c in cands:
        named[c.child] = named.get(c.child, 0) + 1
        if c.measure is not None and c.measure.covered == c.measure.distinct:
            fits[c.child] = fits.get(c.child, 0) + 1
    for c in cands:
        if "structural" in c.terms:
            c.fk.confidence = 1.0
            continue
        if c.measure is None:  # no values to measure: the name alone, at most just HIGH
            c.terms = {"name only": c.name.score}
            c.fk.confidence = 0.85 if c.name.score >= 1.0 else HIGH if c.name.score >= 0.8 else REPORTED
            continue
        c.terms = score_terms(c, fits.get(c.child, 1) - 1)
        confidence = 1 / (1 + math.exp(-sum(c.terms.values())))
        if confidence < HIGH and named[c.child] == 1 and c.fk.coverage == 1.0 and c.terms.get("values", 0) >= 0:
            c.terms["sole parent"] = 0.0
            c.fk.evidence.append("the only parent with name evidence, and it covers every value")
            confidence = HIGH
        c.fk.confidence = round(confidence, 2)


# ------------------------------------------------------------------ global assignment


def _rank(c: Candidate) -> tuple:
    m = c.measure
    full = m is None or m.covered == m.distinct
    return (round(c.fk.confidence, 2), c.name.score, full, -c.parent_rows if full else 0, c.target.is_primary)


def assign(cands: list[Candidate], names: SchemaNames) -> list[Candidate]:
    """One parent per child column set; returns the chosen candidates (at HIGH or above)."""
    groups: dict[tuple[str, tuple[str, ...]], list[Candidate]] = {}
    for c in cands:
        groups.setdefault(c.child, []).append(c)
    chosen: list[Candidate] = []
    for group in groups.values():
        group.sort(key=_rank, reverse=True)
        best = _prefer_base(group, names)
        for c in group:
            if c is not best:
                c.fk.confidence = min(c.fk.confidence, ALTERNATIVE_CAP)
        if best.fk.confidence >= HIGH:
            chosen.append(best)
    chosen = _one_way(chosen, names)
    chosen = _drop_implied(chosen)
    keep = {id(c) for c in chosen}
    for c in cands:
        if id(c) not in keep:
            c.fk.confidence = min(c.fk.confidence, ALTERNATIVE_CAP)
    return chosen


def _prefer_base(group: list[Candidate], names: SchemaNames) -> Candidate:
    """Between a table and its 1:1 extension (`customer_details` holds a few more columns per
    customer), a reference goes to the base table, even when the extension covers its values.
    A subtype (`employee` of `person`) is not named after its base and keeps the reference."""
    best = group[0]
    for other in group[1:]:
        if round(other.fk.confidence, 2) < round(best.fk.confidence, 2) or other.name.score < best.name.score:
            break
        if extension_of(best.target.source.name, names.entity(other.target.source.name)):
            return other
    return best


def _one_way(chosen: list[Candidate], names: SchemaNames) -> list[Candidate]:
    """Two tables whose keys refer to each other are a base and its extension or subtype: the
    one with fewer rows, or else the one named as an aspect of the other, refers to the other."""
    by_pair = {(c.child, c.parent): c for c in chosen}
    drop: set[int] = set()
    for c in chosen:
        back = by_pair.get((c.parent, c.child))
        if back is None or id(back) in drop or id(c) in drop:
            continue
        a, b = c.fk.from_.source, c.fk.to.source
        rows_a, rows_b = back.parent_rows, c.parent_rows
        if rows_a != rows_b:
            extension = a if rows_a < rows_b else b
        elif extension_of(a, names.entity(b)) != extension_of(b, names.entity(a)):
            extension = a if extension_of(a, names.entity(b)) else b
        else:
            extension = max(a, b)
        drop.add(id(back) if extension == a else id(c))
    return [c for c in chosen if id(c) not in drop]


def _drop_implied(chosen: list[Candidate]) -> list[Candidate]:
    """A composite reference C(a, b) -> P(x, y) with P.x -> Q implies C.a -> Q: only the
    composite is a declared-style key."""
    refs = {(c.fk.from_.source, c.fk.from_.columns[0]): c.parent for c in chosen if len(c.fk.from_.columns) == 1}
    drop: set[int] = set()
    for comp in (c for c in chosen if len(c.fk.from_.columns) > 1):
        for col, key in zip(comp.fk.from_.columns, comp.fk.to.columns, strict=True):
            single = refs.get((comp.fk.from_.source, col))
            implied = refs.get((comp.fk.to.source, key))
            if single is not None and single == implied:
                drop.update(id(c) for c in chosen if c.child == (comp.fk.from_.source, (col,)))
    return [c for c in chosen if id(c) not in drop]


# ------------------------------------------------------------------ measuring


def _coverage(con: duckdb.DuckDBPyConnection, child_table: str, cols: list[Column], target: Target) -> Measure:
    cexpr = ", ".join(f"{_key_sql(c)} AS k{i}" for i, c in enumerate(cols))
    pexpr = ", ".join(f"{_key_sql(k)} AS k{i}" for i, k in enumerate(target.columns))
    on = " AND ".join(f"c.k{i} = p.k{i}" for i in range(len(cols)))
    notnull = " AND ".join(f"k{i} IS NOT NULL" for i in range(len(cols)))
    keys = ", ".join(f"c.k{i}" for i in range(len(cols)))
    numeric = len(cols) == 1 and family(target.columns[0]) == "int"
    extremes = ("(SELECT CAST(max(k0) AS DOUBLE) FROM cv), (SELECT CAST(max(k0) AS DOUBLE) FROM p)" if numeric
                else "NULL, NULL")
    row = con.execute(
        f"WITH cv AS (SELECT * FROM (SELECT {cexpr} FROM {quote_ident(child_table)}) WHERE {notnull}), "
        f"p AS (SELECT DISTINCT {pexpr} FROM {quote_ident(target.table)}), "
        f"j AS (SELECT {keys}, p.k0 IS NOT NULL AS hit FROM cv c LEFT JOIN p ON {on}) "
        f"SELECT (SELECT count(*) FROM (SELECT DISTINCT * EXCLUDE (hit) FROM j)), "
        f"(SELECT count(*) FROM (SELECT DISTINCT * EXCLUDE (hit) FROM j WHERE hit)), "
        f"(SELECT count(*) FROM j WHERE NOT hit), "
        f"(SELECT list(DISTINCT CAST(k0 AS VARCHAR) ORDER BY CAST(k0 AS VARCHAR))[1:5] FROM j WHERE NOT hit), "
        f"{extremes}"
    ).fetchone()
    distinct, covered, orphans, examples, child_max, parent_max = row
    return Measure(distinct, covered, orphans, list(examples or []), child_max, parent_max)
