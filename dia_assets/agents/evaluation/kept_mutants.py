"""Which mutants of a gold query are wrong answers, labelled by what they do on the data.

A mutant is kept when it runs and its result differs from the gold's as an answer to the
question (in order only when the question asks for an order), and:

- not a tie reordering: a result that equals the gold's up to the order of rows tied on the
  question's ORDER BY keys is an equivalent answer, dropped;
- stable: run twice, the same result (a LIMIT over ties may return other rows on another run,
  so such a mutant would make the kept set depend on the run), else dropped;
- labelled by its effect: a `fanout_join` must repeat some row the query reads (its probe, run
  on the data); an extra join that repeats none only drops rows: relabelled `extra_join`.

Same question, warehouse and seed: the same kept list, in the same order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from typing import Any

from dia_assets.agents.evaluation.metrics import normalize_rows, results_match
from dia_assets.agents.evaluation.mutants import Mutant, mutants

Rows = Sequence[Sequence[Any]]
Runner = Callable[[str], Rows]  # SQL -> result rows (raises when it does not run)


@dataclass
class Kept:
    cls: str
    sql: str
    note: str
    covered: bool
    rows: list[tuple[Any, ...]]


@dataclass
class Generation:
    kept: list[Kept] = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)  # reason -> count
    dropped_by_class: dict[str, Counter] = field(default_factory=dict)

    def drop(self, cls: str, reason: str) -> None:
        self.dropped[reason] += 1
        self.dropped_by_class.setdefault(cls, Counter())[reason] += 1


def tie_reordering(gold: Rows, other: Rows, key_idx: list[int]) -> bool:
    """`other` holds the gold's rows, in the gold's order except among rows tied on the order
    keys (`key_idx`: their positions in a row)."""
    g, o = normalize_rows(gold), normalize_rows(other)
    if len(g) != len(o) or not key_idx:
        return False

    def blocks(rows: list[tuple[Any, ...]]) -> list[tuple[Any, Counter]]:
        return [(k, Counter(b)) for k, b in groupby(rows, key=lambda r: tuple(r[i] for i in key_idx))]

    return blocks(g) == blocks(o)


def _same_answer(a: Rows, b: Rows, ordered: bool, key_idx: list[int]) -> bool:
    """Two runs give the same answer: equal rows, in the same order where the order is asked for
    (rows tied on the order keys may come in any order)."""
    if results_match(a, b, order_matters=ordered):
        return True
    return ordered and results_match(a, b) and tie_reordering(b, [tuple(r) for r in a], key_idx)


def fans_out(m: Mutant, run: Runner) -> bool:
    """Whether a fan-out mutant's join repeats some row on the data (its probe is true)."""
    if not m.fanout_probe:
        return True
    try:
        rows = run(m.fanout_probe)
    except Exception:
        return True  # the probe cannot say: keep the generator's label
    return bool(rows and rows[0] and rows[0][0])


def kept_mutants(sql: str, dialect: str, schema: dict[str, dict[str, str]], declared: dict[str, Any],
                 keys: dict[str, list[str]], gold: Rows, columns: list[str], run: Runner,
                 order: list[str] | None = None, seed: int = 0) -> Generation:
    """The kept mutants of one gold query (see the module doc). `declared` is the contract the
    generator reads (which classes a mutant covers); `order` the result columns the question
    orders by (none: compared as sets of rows)."""
    lower = [c.lower() for c in columns]
    key_idx = [lower.index(c.lower()) for c in order or [] if c.lower() in lower]
    ordered = bool(key_idx)
    gen = Generation()
    for m in mutants(sql, dialect, schema, declared, keys, seed=seed):
        try:
            rows = [tuple(r) for r in run(m.sql)]
        except Exception:
            gen.drop(m.cls, "errored")
            continue
        if results_match(rows, gold, order_matters=ordered):
            gen.drop(m.cls, "same_result")
            continue
        if ordered and results_match(rows, gold) and tie_reordering(gold, rows, key_idx):
            gen.drop(m.cls, "tie_order")
            continue
        try:
            again = run(m.sql)
        except Exception:
            again = None
        if again is None or not _same_answer(again, rows, ordered, key_idx):
            gen.drop(m.cls, "unstable")
            continue
        cls, note, covered = m.cls, m.note, m.covered
        if cls == "fanout_join" and not fans_out(m, run):
            cls, note, covered = "extra_join", f"{note} (repeats no row: only drops rows)", False
            gen.dropped["relabelled_fanout"] += 1
        gen.kept.append(Kept(cls, m.sql, note, covered, rows))
    return gen
