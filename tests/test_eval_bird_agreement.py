"""Where the harness agrees with BIRD's reference scorers, and where it deviates on purpose.
Expected values are worked out by hand from BIRD's published code (DAMO-ConvAI
`evaluation.py` / `evaluation_ves.py`, mini-dev `evaluation_f1.py`)."""

from __future__ import annotations

import math
import threading
from pathlib import Path
from types import SimpleNamespace

from dia_assets.agents.evaluation import evaluators
from dia_assets.agents.evaluation.metrics import (
    clean_abnormal,
    execution_match,
    results_match,
    soft_f1,
    time_ratio,
    ves,
    ves_ratio,
    ves_reward,
)
from tests.eval_fixtures import write_bird


def test_ex_is_set_equality_on_fetched_rows() -> None:
    assert results_match([(2, "b"), (1, "a")], [(1, "a"), (2, "b")])  # row order: free
    assert not results_match([("a", 1)], [(1, "a")])  # column order: not free
    assert results_match([(1,), (1,)], [(1,)])  # duplicates: sets
    assert results_match([(1,)], [(1.0,)])  # 1 == 1.0 in Python, so in BIRD
    assert results_match([], [])  # set() == set()
    assert results_match([(None,)], [(None,)]) and not results_match([(None,)], [(0,)])
    assert execution_match([(1,)], [None, [(1,)]]) == 1  # a gold that failed is skipped


def test_soft_f1_rows_in_returned_order_is_mini_devs_default() -> None:
    gold, pred = [(1, "a"), (2, "b")], [(2, "b"), (1, "a")]
    # mini-dev aligns row i with row i: no cell of (2,'b') is in (1,'a'): tp 0, fp 2, fn 2
    assert soft_f1(pred, gold) == 0.0
    assert soft_f1(pred, gold, sort_rows=True) == 1.0  # our option: one canonical order
    # NULL rows: aligned as returned, (1,) vs (None,) matches nothing either way
    assert soft_f1([(1,), (None,)], [(None,), (1,)]) == 0.0
    assert soft_f1([(1,), (None,)], [(None,), (1,)], sort_rows=True) == 1.0


def test_soft_f1_cells_duplicates_empty_and_extra_rows() -> None:
    assert soft_f1([(2, 1)], [(1, 2)]) == 1.0  # a cell counts when anywhere in the gold row
    assert soft_f1([(1,), (2,)], [(1,), (1,), (2,)]) == 1.0  # duplicates dropped, first kept
    assert soft_f1([], []) == 1.0 and soft_f1([(1,)], []) == 0.0
    # one extra predicted row: tp 1, fp 1, fn 0 -> precision 0.5, recall 1 -> 2/3
    assert math.isclose(soft_f1([(1,), (9,)], [(1,)]), 2 / 3)
    # half a row: pred (1, 'x') vs gold (1, 'a'): matched 1/2, pred-only 1/2, gold-only 1/2 -> 0.5
    assert math.isclose(soft_f1([(1, "x")], [(1, "a")]), 0.5)


def test_three_sigma_needs_more_than_ten_samples() -> None:
    """With n samples the largest possible z-score is (n-1)/sqrt(n): 2.85 for n = 10, so
    BIRD's filter can never drop one of 10; with 100 it drops the outlier."""
    ten = [1.0] * 9 + [1000.0]
    assert clean_abnormal(ten) == ten
    hundred = [1.0] * 99 + [1000.0]
    assert clean_abnormal(hundred) == [1.0] * 99
    assert time_ratio([(2.0, 1.0)] * 99 + [(2000.0, 1.0)]) == 2.0


def test_both_ves_definitions() -> None:
    assert ves_reward(4.0) == 1.25 and ves_reward(1.0) == 1.0 and ves_reward(0.3) == 0.5
    # one correct instance twice as fast as gold... four times: reward 1.25, ratio 4
    assert math.isclose(ves([1], [ves_reward(4.0)]), 100 * math.sqrt(1.25))
    assert math.isclose(ves_ratio([1], [4.0]), 200.0)  # the original definition is uncapped
    assert math.isclose(ves_ratio([1, 0], [1.0, None]), 50.0)  # incorrect counts 0
    assert ves_ratio([1], [None]) is None


def test_each_instance_is_timed_alone() -> None:
    """Timing holds a process-wide lock, so parallel workers do not slow each other's timing."""
    seen: list[bool] = []
    inside = threading.Event()

    class DB:
        def query(self, sql: str, timeout_s: float) -> None:
            seen.append(evaluators.TIMING_LOCK.locked())
            inside.set()

    ctx = SimpleNamespace(matched=0, gold_sql=["SELECT 1"], prediction=SimpleNamespace(sql="SELECT 1"), pred_execution=None,
                          db=DB(), timeout_s=5.0)
    result = evaluators.ValidEfficiency(iterations=3).evaluate(ctx)  # type: ignore[arg-type]
    assert "ves_reward" in result  # its value is a timing ratio: never asserted (shared machines)
    assert seen and all(seen) and not evaluators.TIMING_LOCK.locked()


def test_bird_runs_default_to_executed_order_and_100_iterations(tmp_path: Path) -> None:
    from dia_assets.cli.eval import _is_bird

    path = write_bird(tmp_path / "bird")
    assert _is_bird(path, "auto") and _is_bird(path, "bird")
    assert not _is_bird(path, "jsonl")
    jsonl = tmp_path / "q.jsonl"
    jsonl.write_text('{"id": "a", "question": "q", "gold_sql": "SELECT 1", "db": "x"}\n')
    assert not _is_bird(jsonl, "auto")
