"""The evidence measured for each foreign-key candidate, before any score is given to it.

A candidate (`Candidate`) is a child column set against a parent key (`Target`). What is known
about it:

- name: `platform/key_names.py` (`SchemaNames.evidence`) says how much the child column's name
  says about the parent key (same name or names the table, role, stem), with a reason;
- coverage: `measure_reference` measures on the data the share of its distinct values found
  in the parent (`Measure.coverage`), its orphan rows and a few of their values;
- distinctiveness: for integer keys, where its values lie in the parent's range (`child_max`,
  `parent_max`: a small count among sequence numbers sits in a corner); whether the values are
  text or integers (`family`), and which domains can be compared at all (`compatible`).

`score.py` turns this evidence into a confidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from dia_assets.agents.interpreter.table_info import (
    INT_TYPES,
    TableInfo,
    keyable,
)
from dia_assets.agents.value_parsing import parse_expression, present
from dia_assets.contracts.interpretation import Column, ForeignKey, Source
from dia_assets.platform.key_names import NameEvidence
from dia_assets.platform.naming import quote_ident

__all__ = ["Candidate", "Measure", "Target", "all_null", "compatible", "family", "measure_reference"]


@dataclass
class Target:
    """A parent key a child column set may refer to: a primary key, or another identifier-named
    unique column (`foreign.targets`)."""

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
    """A child column set against a target, with its evidence; `score.py` fills `terms` and
    `fk.confidence`."""

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
    if all_null(col):
        return "any"
    t = col.inferred_type.upper()
    if t.startswith(INT_TYPES):
        return "int"
    if t == "VARCHAR" and keyable(col):
        return "text"
    return None


def all_null(col: Column) -> bool:
    return col.distinct_count == 0 and col.null_fraction >= 1.0


def compatible(child: Column, key: Column) -> bool:
    a, b = family(child), family(key)
    return a is not None and b is not None and (a == b or a == "any")


def _key_sql(col: Column) -> str:
    ident = quote_ident(col.name)
    fam = family(col)
    if col.physical_type.upper() in ("VARCHAR", "JSON"):
        value = present(ident)
        return parse_expression(value, "HUGEINT", col.value_format) if fam == "int" else value
    return f"CAST({ident} AS HUGEINT)" if fam == "int" else f"CAST({ident} AS VARCHAR)"


# ------------------------------------------------------------------ measuring


def measure_reference(con: duckdb.DuckDBPyConnection, child_table: str, cols: list[Column], target: Target) -> Measure:
    """Coverage, orphans and (integer keys) the largest values of `cols` against `target`, one query."""
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
