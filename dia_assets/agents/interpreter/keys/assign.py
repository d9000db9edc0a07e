"""The choices made over the schema as a whole, once every candidate has its confidence: one
parent per child column set, and the primary keys that depend on the foreign keys.

Foreign keys (`assign`, after Auto-BI's global assignment over the schema graph): each child
column set keeps its best parent (by confidence, then name, then the most specific parent that
still covers its values, then a primary-key target); the others stay below HIGH as alternatives
for the reviewer (`ALTERNATIVE_CAP`). A composite reference replaces the single-column
references it implies (`lineitem(partkey, suppkey) -> partsupp` implies `lineitem.partkey ->
part` through `partsupp.partkey -> part`). Of two tables that share one key (1:1), the
extension refers to its base, never both ways. A key-named column with no parent takes the
parent of a same-named column elsewhere when the data agrees (`propagate`:
`departments.manager_id`).

Primary keys, after the foreign keys are known (`revise_keys`; the interpreter then finds the
foreign keys again): a table whose key nobody refers to while another of its unique identifier
columns is referred to takes that column (a dimension's surrogate key beside its business key);
link and relationship tables are keyed by their references; a history table (references, then a
start date and an end date) keeps its start date in the key.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb

from dia_assets.agents.interpreter.keys.features import Candidate, Target
from dia_assets.agents.interpreter.keys.primary import MAX_LEADING, count_distinct, unique_rows
from dia_assets.agents.interpreter.table_info import TableInfo, complete
from dia_assets.contracts.interpretation import Column, ForeignKey, KeyCandidate
from dia_assets.contracts.policy import HIGH
from dia_assets.platform.key_names import NameEvidence, SchemaNames, extension_of, id_like
from dia_assets.platform.naming import quote_ident

__all__ = ["ALTERNATIVE_CAP", "assign", "propagate", "revise_keys"]

ALTERNATIVE_CAP = round(HIGH - 0.05, 2)  # a column's second-best parent stays below HIGH
Single = Callable[[TableInfo, Column, Target, NameEvidence], Candidate | None]  # `foreign.Finder._single`


# ------------------------------------------------------------------ foreign keys


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


def propagate(infos: list[TableInfo], chosen: list[Candidate], single: Single) -> list[Candidate]:
    """A key-named column with no parent takes the parent of a same-named column elsewhere
    (`departments.manager_id` as `employees.manager_id -> employees`), if the values agree."""
    placed = {c.child: c for c in chosen if len(c.fk.from_.columns) == 1}
    by_name: dict[str, Candidate] = {}
    for (_, (column,)), c in sorted(placed.items()):
        by_name.setdefault(column, c)
    out = []
    for info in infos:
        for col in info.source.columns:
            model = by_name.get(col.name)
            if (model is None or (info.source.name, (col.name,)) in placed or not id_like(col.name)
                    or model.fk.from_.source == info.source.name or col.name in ("id", "code", "key")):
                continue
            why = (f"same name as {model.fk.from_.source}.{col.name}, which references "
                   f"{model.fk.to.source}.{model.fk.to.columns[0]}")
            cand = single(info, col, model.target, NameEvidence("role", 0.8, why))
            if cand:
                out.append(cand)
    return out


# ------------------------------------------------------------------ primary keys


def revise_keys(con: duckdb.DuckDBPyConnection, infos: list[TableInfo], fks: list[ForeignKey]) -> bool:
    """Keys that need the foreign keys (module docstring); True when one changed."""
    changed = [_referenced_key(infos, fks), _prefer_link_keys(infos, fks), _history_keys(con, infos, fks)]
    return any(changed)


def _history_keys(con: duckdb.DuckDBPyConnection, infos: list[TableInfo], fks: list[ForeignKey]) -> bool:
    """A history table keeps its date in the key: a key made of leading references, followed by
    the start of a validity interval (a date, then another date or timestamp) that is unique with
    the first of them (one row per entity and start date), runs through that date
    (`(employee, department, shift, start_date)`), even when the references alone happen to be
    unique. A link table with one date among its attributes is not a history."""
    changed = False
    for info in infos:
        src = info.source
        pk = src.primary_key
        if pk is None or len(pk.columns) < 2 or src.row_count == 0:
            continue
        refs = _pointing(fks, src.name)
        cols = [c.name for c in src.columns]
        if cols[: len(pk.columns)] != pk.columns or not all(c in refs for c in pk.columns):
            continue
        after, end = (src.columns[len(pk.columns): len(pk.columns) + 2] + [None, None])[:2]
        if after is None or after.semantic_type != "date" or not complete(after) or end is None or (
                end.semantic_type not in ("date", "timestamp")):
            continue
        table = quote_ident(info.table)
        first = src.column(pk.columns[0])
        if count_distinct(con, table, [[first, after]])[0] != unique_rows(src):
            continue
        src.primary_key = KeyCandidate(
            columns=[*pk.columns, after.name], confidence=0.85,
            reason=f"history table: its references {pk.columns} are followed by the date {after.name!r}, which "
            f"is unique with {first.name!r}: one row per entity and date")
        src.candidate_keys.insert(0, src.primary_key)
        changed = True
    return changed


def _pointing(fks: list[ForeignKey], source: str) -> set[str]:
    """Columns of `source` that refer to another table at HIGH confidence."""
    return {fk.from_.columns[0] for fk in fks if fk.from_.source == source and len(fk.from_.columns) == 1
            and fk.confidence >= HIGH and fk.to.source != source}


def _referenced_key(infos: list[TableInfo], fks: list[ForeignKey]) -> bool:
    """A table keyed by a column nobody refers to, while other tables refer to another of its
    unique identifier columns, is keyed by that one: the surrogate key of a dimension, not its
    business key (or the other way round)."""
    used: dict[str, set[tuple[str, ...]]] = {}
    for fk in fks:
        if fk.confidence >= HIGH and fk.from_.source != fk.to.source:
            used.setdefault(fk.to.source, set()).add(tuple(fk.to.columns))
    changed = False
    for info in infos:
        src = info.source
        refs = used.get(src.name, set())
        if not src.primary_key or len(src.primary_key.columns) != 1 or tuple(src.primary_key.columns) in refs:
            continue
        others = [k for k in src.candidate_keys if len(k.columns) == 1 and tuple(k.columns) in refs]
        if len(others) != 1:
            continue
        col = others[0].columns
        src.primary_key = KeyCandidate(
            columns=col, confidence=max(0.85, others[0].confidence),
            reason=f"other tables refer to {col[0]!r}, not to {src.primary_key.columns[0]!r}: it is the key "
            "the schema uses (a surrogate key beside a business key)")
        src.candidate_keys = [src.primary_key, *(k for k in src.candidate_keys if k.columns != col)]
        changed = True
    return changed


def _prefer_link_keys(infos: list[TableInfo], fks: list[ForeignKey]) -> bool:
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
        pointing = _pointing(fks, src.name)
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
