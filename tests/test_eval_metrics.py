"""EX, soft-F1 and VES on hand-made gold/prediction pairs; expected scores worked out by hand
in the comments (DIA App. A.2, BIRD's evaluation code)."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dia_assets.agents.evaluation.metrics import (
    best_soft_f1,
    clean_abnormal,
    execution_match,
    measure_time_ratio,
    percentile,
    results_match,
    soft_f1,
    time_ratio,
    ves,
    ves_reward,
)
from dia_assets.platform.sql.rows import normalize_value

GOLD = [(1, "a"), (2, "b")]


# -- EX -------------------------------------------------------------------------------------------


def test_set_semantics_ignore_row_order_and_duplicates() -> None:
    assert results_match([(2, "b"), (1, "a")], GOLD)
    assert results_match([(1, "a"), (1, "a"), (2, "b")], GOLD)  # BIRD: set(pred) == set(gold)
    assert not results_match([(1, "a")], GOLD)


def test_order_required_compares_lists() -> None:
    assert results_match(GOLD, GOLD, order_matters=True)
    assert not results_match([(2, "b"), (1, "a")], GOLD, order_matters=True)
    assert not results_match([(1, "a"), (1, "a"), (2, "b")], GOLD, order_matters=True)


def test_column_order_matters_for_ex() -> None:
    assert not results_match([("a", 1), ("b", 2)], GOLD)


def test_nulls() -> None:
    assert results_match([(None,)], [(None,)])
    assert not results_match([(None,)], [(0,)])
    assert not results_match([(None,)], [("",)])
    assert results_match([(None, 1), (2, None)], [(2, None), (None, 1)])


def test_decimal_and_float_of_the_same_digits_are_equal() -> None:
    # DuckDB DECIMAL(10,2) next to a DOUBLE: Decimal('43.92') != 43.92 in Python; normalized, equal
    assert results_match([(43.92,)], [(Decimal("43.92"),)])
    assert results_match([(3,)], [(3.0,)])  # COUNT vs a float expression


def test_per_instance_decimal_precision() -> None:
    assert not results_match([(0.1 + 0.2,)], [(0.3,)])  # exact by default, like BIRD
    assert results_match([(0.1 + 0.2,)], [(0.3,)], decimals=2)
    assert not results_match([(1 / 3,)], [(0.33,)])
    assert results_match([(1 / 3,)], [(0.33,)], decimals=2)
    assert not results_match([(0.336,)], [(0.33,)], decimals=2)  # 0.336 -> 0.34
    # half-up on the decimal digits, for floats and decimals alike (round(2.675, 2) would give 2.67)
    assert normalize_value(2.675, 2) == normalize_value(Decimal("2.675"), 2) == 2.68


def test_other_types_normalize() -> None:
    import datetime as dt

    assert results_match([(dt.date(2026, 1, 2),)], [("2026-01-02",)])  # SQLite returns text
    assert results_match([(float("nan"),)], [(float("nan"),)])
    assert results_match([([1, 2],)], [([1, 2],)])  # lists are unhashable: canonical JSON
    # an instant (PostgreSQL's TIMESTAMPTZ, Spark's TIMESTAMP) against a plain TIMESTAMP of a UTC
    # session: the same time; another instant, or the same wall-clock time elsewhere, is not
    naive = dt.datetime(1997, 1, 1)
    assert results_match([(naive,)], [(naive.replace(tzinfo=dt.UTC),)])
    assert results_match([(naive,)], [(dt.datetime(1997, 1, 1, 2, tzinfo=dt.timezone(dt.timedelta(hours=2))),)])
    assert not results_match([(naive,)], [(naive.replace(tzinfo=dt.timezone(dt.timedelta(hours=2))),)])
    assert not results_match([(naive,)], [(dt.datetime(1997, 1, 1, 0, 0, 1, tzinfo=dt.UTC),)])


def test_empty_results_match_each_other_only() -> None:
    assert results_match([], [])  # BIRD: set() == set()
    assert not results_match([(1,)], [])
    assert not results_match([], [(1,)])


def test_several_acceptable_gold_results() -> None:
    golds = [[(1,)], [(1, "a")], None]  # the third alternative failed to execute
    assert execution_match([(1, "a")], golds) == 1
    assert execution_match([(1,)], golds) == 0
    assert execution_match([(2,)], golds) is None


def test_ties_at_a_top_n_boundary() -> None:
    gold = [("x", 17), ("y", 17), ("z", 19)]  # top 3 with a tie
    assert results_match([("z", 19), ("y", 17), ("x", 17)], gold)  # ties in another order: fine
    assert not results_match([("z", 19), ("x", 17)], gold)  # a tie dropped at the boundary
    # soft-F1 of the dropped tie, rows sorted: gold (x,17),(y,17),(z,19); pred (x,17),(z,19)
    # pair 1: 2/2 matched; pair 2: (z,19) vs (y,17): 0 matched, 1 pred-only, 1 gold-only; row 3: FN 1
    # tp = 1, fp = 1, fn = 2 -> P = 1/2, R = 1/3, F1 = 2 * (1/6) / (5/6) = 0.4
    assert soft_f1([("z", 19), ("x", 17)], gold, sort_rows=True) == pytest.approx(0.4)


# -- soft-F1 ---------------------------------------------------------------------------------------


def test_soft_f1_partial_row() -> None:
    # row 1 exact (tp 1); row 2 (2,'c') vs (2,'b'): 1/2 matched, 1/2 pred-only, 1/2 gold-only
    # tp 1.5, fp 0.5, fn 0.5 -> P = R = 0.75 -> F1 0.75
    assert soft_f1([(1, "a"), (2, "c")], GOLD) == pytest.approx(0.75)


def test_soft_f1_extra_and_missing_rows() -> None:
    assert soft_f1([(1,), (2,)], [(1,)]) == pytest.approx(2 / 3)  # tp 1, fp 1: P 1/2, R 1
    assert soft_f1([(1,)], [(1,), (2,)]) == pytest.approx(2 / 3)  # tp 1, fn 1: P 1, R 1/2


def test_soft_f1_duplicates_dropped_and_column_order_forgiven() -> None:
    assert soft_f1([(1,), (1,), (2,)], [(1,), (2,)]) == 1.0
    assert soft_f1([("a", 1)], [(1, "a")]) == 1.0  # a cell matches anywhere in the gold row


def test_soft_f1_extra_column() -> None:
    # 2/2 matched, 1/2 pred-only: tp 1, fp 0.5 -> P 2/3, R 1 -> F1 0.8
    assert soft_f1([(1, "a", "x")], [(1, "a")]) == pytest.approx(0.8)


def test_soft_f1_null_cells() -> None:
    # (None, 2) vs (None, 1): None matches; 2 pred-only; 1 gold-only -> tp .5 fp .5 fn .5 -> 0.5
    assert soft_f1([(None, 2)], [(None, 1)]) == pytest.approx(0.5)


def test_soft_f1_empty_results() -> None:
    assert soft_f1([], []) == 1.0
    assert soft_f1([(1,)], []) == 0.0
    assert soft_f1([], [(1,)]) == 0.0


def test_soft_f1_row_alignment_executed_or_sorted() -> None:
    # BIRD's code aligns rows as returned: (2,) vs (1,) and (1,) vs (2,) share nothing -> 0
    assert soft_f1([(2,), (1,)], [(1,), (2,)]) == 0.0
    assert soft_f1([(2,), (1,)], [(1,), (2,)], sort_rows=True) == 1.0


def test_soft_f1_best_of_several_golds_and_precision() -> None:
    assert best_soft_f1([(1,)], [[(2,)], [(1,)], None]) == 1.0
    assert best_soft_f1([(1,)], [None]) == 0.0
    assert soft_f1([(0.1 + 0.2,)], [(0.3,)], decimals=2) == 1.0


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(-3, 3), st.sampled_from(["a", "b", None])), max_size=6), st.randoms())
def test_properties_of_ex_and_soft_f1(rows: list[tuple[int, str | None]], rnd: object) -> None:
    shuffled = list(rows) + list(rows[:2])
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert results_match(shuffled, rows)
    assert soft_f1(shuffled, rows, sort_rows=True) == 1.0
    assert 0.0 <= soft_f1(shuffled, rows) <= 1.0


# -- VES --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("tau", "reward"), [
    (5.0, 1.25), (2.0, 1.25), (1.99, 1.0), (1.0, 1.0), (0.99, 0.75), (0.5, 0.75), (0.49, 0.5),
    (0.25, 0.5), (0.24, 0.25), (0.01, 0.25), (0.0, 0.0),
])
def test_ves_step_reward(tau: float, reward: float) -> None:
    assert ves_reward(tau) == reward


def test_time_ratio_drops_outliers_beyond_three_sigma() -> None:
    # 20 samples of ratio 1 and one of 100: mean 5.71, std 21.08, upper bound 68.96 -> 100 dropped
    samples = [(1.0, 1.0)] * 20 + [(100.0, 1.0)]
    assert time_ratio(samples) == pytest.approx(1.0)
    assert time_ratio([(2.0, 1.0)] * 3) == 2.0  # std 0: BIRD would divide by zero; we keep them
    assert clean_abnormal([]) == []


def test_measure_time_ratio_with_a_scripted_clock() -> None:
    clock = {"t": 0.0}

    def timer() -> float:
        return clock["t"]

    def gold() -> None:
        clock["t"] += 3.0

    def pred() -> None:
        clock["t"] += 1.0

    assert measure_time_ratio(gold, pred, 4, timer=timer) == pytest.approx(3.0)


def test_ves_aggregate() -> None:
    # 100/4 * (sqrt(1.25) + sqrt(0.25) + 0 + sqrt(1)) = 25 * 2.6180 = 65.45
    assert ves([1, 1, 0, 1], [1.25, 0.25, 0.0, 1.0]) == pytest.approx(25 * (math.sqrt(1.25) + 0.5 + 1))
    assert ves([1, 0], [None, 0.0]) is None  # a correct instance was not timed
    assert ves([], []) is None


def test_percentiles() -> None:
    assert percentile([4, 1, 3, 2], 50) == 2.5
    assert percentile([1, 2, 3, 4], 90) == pytest.approx(3.7)
    assert percentile([], 50) is None


def _reference_bird_soft_f1(predicted: list[tuple], ground_truth: list[tuple]) -> float:
    """An independent re-statement of BIRD's calculate_f1_score (evaluation_f1.py), to check
    ours against on random results."""
    if not predicted and not ground_truth:
        return 1.0
    pred, gold = list(dict.fromkeys(predicted)), list(dict.fromkeys(ground_truth))
    tp = fp = fn = 0.0
    for i, g in enumerate(gold):
        if i >= len(pred):
            fn += 1
            continue
        p = pred[i]
        tp += sum(v in g for v in p) / len(g)
        fp += sum(v not in g for v in p) / len(g)
        fn += sum(v not in p for v in g) / len(g)
    fp += max(0, len(pred) - len(gold))
    prec = tp / (tp + fp) if tp + fp else 0
    rec = tp / (tp + fn) if tp + fn else 0
    return 2 * prec * rec / (prec + rec) if prec + rec else 0


_cells = st.one_of(st.none(), st.integers(-2, 2), st.sampled_from(["x", "y"]))


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.integers(1, 3).flatmap(lambda w: st.tuples(
    st.lists(st.tuples(*[_cells] * w), max_size=5),
    st.lists(st.tuples(*[_cells] * w), max_size=5))))
def test_soft_f1_agrees_with_birds_code_and_ex_with_set_equality(pair: tuple[list, list]) -> None:
    pred, gold = pair
    assert soft_f1(pred, gold) == pytest.approx(_reference_bird_soft_f1(pred, gold))
    assert results_match(pred, gold) == (set(pred) == set(gold))
