"""Fidelity across engines (issue 33): the gold SQL of a question set returns the same rows on
every engine's build of the same files.

Each gold query (its first alternative, the one `OracleSolver` answers with) is transpiled from
its dialect to each engine's with `transpile_gold`, run through evaluation's read connection
(`open_database`: the connection scoring runs on) and compared with the first engine's rows.
Values go through evaluation's cross-engine normalization (`platform.sql.rows`: DECIMAL as float,
dates as ISO text, the instance's `decimals`), then rows compare as a multiset, or as a list when
the question says order matters. Two differences from EX's rule (`metrics.results_match`), which
compares a prediction with a gold result on one engine:

- duplicates count: one engine returning a row twice is a disagreement;
- floats agree within a relative 1e-9: the same average is a DOUBLE on DuckDB and an exact
  NUMERIC on PostgreSQL (AVG of a DECIMAL), whose floats can differ in the last bit.

A disagreement is either an engine bug in the build (the loader changed a value) or a gold query
whose meaning depends on the engine (ties under LIMIT, a function sqlglot does not carry over);
both need fixing.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from dia_assets.agents.evaluation.databases import Database, open_database
from dia_assets.agents.evaluation.datasets import transpile_gold
from dia_assets.agents.evaluation.models import EvalInstance
from dia_assets.platform.sql.rows import Row, normalize_rows


@dataclass
class EngineRun:
    """One gold query on one engine: the SQL it ran, its rows or its error."""

    engine: str
    sql: str
    rows: list[Row] | None = None
    error: str | None = None


@dataclass
class Agreement:
    """One question across engines. `only_in[engine]`: the rows (normalized, with multiplicity)
    that engine returned and the reference (the first engine) did not; `missing[engine]` the
    reverse. With `order_matters`, equal multisets in another order disagree with both empty."""

    id: str
    agree: bool
    runs: dict[str, EngineRun]
    only_in: dict[str, list[Row]] = field(default_factory=dict)
    missing: dict[str, list[Row]] = field(default_factory=dict)

    def row_counts(self) -> dict[str, int | None]:
        return {e: (len(r.rows) if r.rows is not None else None) for e, r in self.runs.items()}

    def describe(self, limit: int = 5) -> str:
        """A short account of a disagreement, for an assertion message."""
        parts = [f"{self.id}: rows {self.row_counts()}"]
        for engine, run in self.runs.items():
            if run.error:
                parts.append(f"  {engine} failed: {run.error}")
        for engine, rows in self.only_in.items():
            parts.append(f"  only on {engine}: {rows[:limit]}")
        for engine, rows in self.missing.items():
            parts.append(f"  missing on {engine}: {rows[:limit]}")
        if len(parts) == 1 and not self.agree:
            parts.append("  the same rows in another order")
        return "\n".join(parts)


def run_gold(instance: EvalInstance, db: Database, timeout_s: float = 30.0) -> EngineRun:
    """The instance's first gold query in `db`'s dialect, run; an error is kept, not raised."""
    sql = instance.gold_sql[0]
    try:
        sql = transpile_gold(sql, instance.dialect, db.dialect, db.column_types)
        return EngineRun(db.dialect, sql, rows=db.query(sql, timeout_s=timeout_s).rows)
    except Exception as err:  # noqa: BLE001 - a failure on one engine is a finding, not a crash
        return EngineRun(db.dialect, sql, error=f"{type(err).__name__}: {err}"[:600])


REL_TOL = 1e-9


def _close(a: object, b: object) -> bool:
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool) \
            and (isinstance(a, float) or isinstance(b, float)):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)
    return a == b


def _rows_close(a: Row, b: Row) -> bool:
    return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=True))


def _unmatched(rows: list[Row], ref: list[Row]) -> tuple[list[Row], list[Row]]:
    """(rows without a counterpart in ref, ref rows without one in rows): the multiset difference,
    then pairs that differ only by float noise taken out."""
    a, b = Counter(rows), Counter(ref)
    extra, lack = sorted((a - b).elements(), key=repr), sorted((b - a).elements(), key=repr)
    for row in list(extra):
        twin = next((r for r in lack if _rows_close(row, r)), None)
        if twin is not None:
            extra.remove(row)
            lack.remove(twin)
    return extra, lack


def compare_runs(instance: EvalInstance, runs: Mapping[str, EngineRun]) -> Agreement:
    """Agreement of one instance's runs, the first engine as the reference."""
    engines = list(runs)
    ref = runs[engines[0]]
    agreement = Agreement(instance.id, agree=ref.rows is not None, runs=dict(runs))
    for engine in engines[1:]:
        other = runs[engine]
        if ref.rows is None or other.rows is None:
            agreement.agree = False
            continue
        mine, theirs = normalize_rows(other.rows, instance.decimals), normalize_rows(ref.rows, instance.decimals)
        extra, lack = _unmatched(mine, theirs)
        if extra or lack:
            agreement.only_in[engine], agreement.missing[engine] = extra, lack
        same = not extra and not lack
        if same and instance.order_matters:
            same = all(_rows_close(x, y) for x, y in zip(mine, theirs, strict=True))
        agreement.agree = agreement.agree and same
    return agreement


def compare_engines(instances: Sequence[EvalInstance], targets: Mapping[str, str | Path],
                    timeout_s: float = 30.0) -> list[Agreement]:
    """Every instance's gold query on every target ({engine label: warehouse target, the
    reference first}), one connection per target for the whole set."""
    if len(targets) < 2:
        raise ValueError("fidelity compares at least two engines")
    dbs = {label: open_database(target, name=label) for label, target in targets.items()}
    try:
        return [compare_runs(inst, {label: run_gold(inst, db, timeout_s) for label, db in dbs.items()})
                for inst in instances]
    finally:
        for db in dbs.values():
            db.close()
