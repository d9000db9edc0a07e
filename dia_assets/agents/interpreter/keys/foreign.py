"""Foreign-key candidates: which child column sets may refer to which parent keys, measured on
the data, scored one by one (`score.py`), then chosen for the schema as a whole (`assign.py`),
after Auto-BI: a local join classifier, then a global assignment over the schema graph.

Every child column whose name says something about a parent key (`platform/key_names.py`) is
measured against that key (`features.py`): the share of its distinct values found there
(coverage), the share of the parent's keys it uses, where its values lie in the parent's range.
Composite references are column tuples whose names match a composite key column by column.

Value inclusion without any name evidence never makes a foreign key: small integers fit every
sequence key. Targets are primary keys and identifier-named unique columns (a surrogate key
beside a business key), never an ordinary column that happens to be unique (`last_name`).

Strength: `strong` when the name evidence is exact (same name or names the table), declared or
structural; anything else is `weak`. The Schema Creator blocks acceptance only on strong keys the
data contradicts; weak ones are reported for review.
"""

from __future__ import annotations

import duckdb

from dia_assets.agents.interpreter.keys.assign import assign, propagate
from dia_assets.agents.interpreter.keys.features import (
    Candidate,
    Measure,
    Target,
    all_null,
    compatible,
    measure_reference,
)
from dia_assets.agents.interpreter.keys.score import score_candidates
from dia_assets.agents.interpreter.table_info import TableInfo, keyable
from dia_assets.contracts.interpretation import Column, ForeignKey, Source, SourceRef
from dia_assets.contracts.policy import REPORTED
from dia_assets.platform.key_names import NameEvidence, SchemaNames, id_like

__all__ = ["Finder", "find_foreign_keys", "targets"]

MIN_NAME = 0.4  # name evidence a candidate needs before it is measured
COMPOSITE_COVERAGE = 0.95  # a column tuple must be found almost whole: pairs coincide rarely, but they do


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
    after primary keys changed (`assign.revise_keys`) queries only what is new."""

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
        score_candidates(cands)
        cands += propagate(self.infos, assign(cands, self.names), self._single)
        score_candidates(cands)
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
        if not compatible(col, key) or not (keyable(col) or all_null(col)):
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
                if col in cols or not compatible(col, key):
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
        if child.row_count == 0 or all(all_null(c) for c in cols):
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
            self._measured[key] = measure_reference(self.con, info.table, cols, target)
        return self._measured[key]


def find_foreign_keys(con: duckdb.DuckDBPyConnection, infos: list[TableInfo]) -> list[ForeignKey]:
    """The foreign keys among `infos` in one pass (no primary-key revision)."""
    return Finder(con, infos).find()

