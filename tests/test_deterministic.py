"""Interpretation is deterministic: the same files give the same interpretation, byte for byte.

`generated_at` (when the interpretation was made) is the one field allowed to differ: each
test sets it equal in both runs and compares every other byte of `to_json()`.

DuckDB runs on four threads here (more than the cores of a small machine, so they
interleave), and the folders are big enough for the work to be split: the flattened
children of nested JSON, which DuckDB's unnest emitted in the order its threads finished,
and a flat file of several row groups (122,880 rows each), whose deciles (a t-digest) and
means (a floating-point sum) came out in the order the threads merged them.
"""

from __future__ import annotations

import difflib
import json
import random
from pathlib import Path

import duckdb
import pytest

from dia_assets.agents.interpreter import interpret
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.platform import limits
from dia_assets.platform.files.readers import read_json_source
from tests.conftest import EXAMPLES

THREADS = 4
WORDS = ["alpha", "Beta", "gamma 7", "DELTA-9", "eps", "zeta x", "B00417", "2024-01-31", "Zoë", "n/a"]


@pytest.fixture(autouse=True)
def _threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The interpreter's connection on THREADS threads, whatever the machine has."""
    configure = limits.configure

    def threaded(con: duckdb.DuckDBPyConnection, spill: Path) -> None:
        configure(con, spill)
        con.execute(f"SET threads = {THREADS}")

    monkeypatch.setattr(limits, "configure", threaded)


def _orders(n: int, keyed: bool, seed: int = 3) -> list[dict]:
    """`n` orders, each with a nested array of 1-8 lines (numbers and text); with `keyed`, an
    order id (children link by it, else by row number) and a nested array in each line."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        lines = []
        for _ in range(rnd.randrange(1, 9)):
            line = {"sku": f"{rnd.choice('ABCDEFGH')}{rnd.randrange(100_000):05d}", "qty": rnd.randrange(1, 500),
                    "price": round(rnd.uniform(0.5, 999.0), 2), "note": f"{rnd.choice(WORDS)} {rnd.randrange(1000)}"}
            if keyed:
                line["discounts"] = [round(rnd.uniform(0, 0.5), 3) for _ in range(rnd.randrange(0, 3))]
            lines.append(line)
        order = {"customer": rnd.choice(WORDS), "amount": round(rnd.uniform(1, 5000), 2),
                 "tags": [rnd.choice(WORDS) for _ in range(rnd.randrange(0, 4))], "lines": lines}
        out.append({"order_id": 900_000 + i, **order} if keyed else order)
    return out


def _nested_folder(root: Path) -> Path:
    """A JSON array of 6,000 orders linked to their children by row number, and JSON Lines of
    6,000 keyed orders with nested arrays two levels deep (about 27,000 lines each)."""
    folder = root / "nested"
    folder.mkdir()
    (folder / "orders.json").write_text(json.dumps(_orders(6000, keyed=False)), encoding="utf-8")
    (folder / "shipments.jsonl").write_text(
        "".join(json.dumps(o) + "\n" for o in _orders(6000, keyed=True, seed=4)), encoding="utf-8")
    return folder


def _assert_identical(first: Interpretation, second: Interpretation) -> None:
    """Every byte of the two interpretations' JSON but `generated_at`."""
    same = {"generated_at": "(set equal)"}
    a, b = first.model_copy(update=same).to_json(), second.model_copy(update=same).to_json()
    if a != b:
        diff = list(difflib.unified_diff(a.splitlines(), b.splitlines(), "first run", "second run", lineterm="", n=2))
        pytest.fail(f"two interpretations of the same files differ ({len(diff)} diff lines):\n" + "\n".join(diff[:60]))


def _twice(folder: Path) -> tuple[Interpretation, Interpretation]:
    return interpret(folder, progress=lambda _m: None), interpret(folder, progress=lambda _m: None)


def test_the_example_data_interprets_identically() -> None:
    """Four runs, every byte but generated_at: two runs agreed by chance in 10 of 15 tries
    before the fix, so four make a chance pass much rarer (and the goldens pin the result)."""
    runs = [interpret(EXAMPLES / "data", progress=lambda _m: None) for _ in range(4)]
    assert runs[0].source("shifts_assignments").parent is not None  # a flattened child is among them
    assert any(c.quantiles and c.patterns and c.examples for s in runs[0].sources for c in s.columns)
    for other in runs[1:]:
        _assert_identical(runs[0], other)


def test_nested_json_interprets_identically(tmp_path: Path) -> None:
    first, second = _twice(_nested_folder(tmp_path))
    rows = {s.name: s.row_count for s in first.sources}
    assert rows["orders"] == rows["shipments"] == 6000 and rows["orders_lines"] > 20_000, rows
    assert rows["shipments_lines_discounts"] > 5000, rows  # a child of a child
    assert first.source("orders_lines").parent.columns == ["row_no"]
    assert first.source("shipments_lines").parent.columns == ["order_id"]
    _assert_identical(first, second)


def test_a_long_flat_file_interprets_identically(tmp_path: Path) -> None:
    """400,000 rows (four row groups) of near-unique decimals: deciles and means come from
    the full rows, not from (value, count) groups."""
    rnd = random.Random(5)
    folder = tmp_path / "flat"
    folder.mkdir()
    with (folder / "readings.csv").open("w", encoding="utf-8") as out:
        out.write("reading_id,sensor,value,ratio\n")
        for i in range(400_000):
            out.write(f"{i + 1},S{rnd.randrange(40)},{rnd.uniform(-500, 5000):.4f},{rnd.random():.6f}\n")
    first, second = _twice(folder)
    value = first.source("readings").column("value")
    assert value.inferred_type.startswith("DECIMAL") and len(value.quantiles) == 9 and value.mean is not None
    _assert_identical(first, second)


def test_deciles_of_a_long_column_come_from_rows_fixed_by_position(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beyond DECILE_VALUES rows, deciles are exact over the rows a hash of the row id keeps
    (bounded memory): the same rows, so the same deciles, on any number of threads."""
    from dia_assets.agents.interpreter import profile

    monkeypatch.setattr(profile, "DECILE_VALUES", 5_000)  # the subset of 50,000 rows: 1 in 10
    con = duckdb.connect(config={"preserve_insertion_order": True})
    con.execute("CREATE TABLE t AS SELECT CAST(i AS VARCHAR) AS reading_no, "
                "CAST(round((hash(i) % 1000000) / 7.0, 4) AS VARCHAR) AS value FROM range(50000) r(i)")
    got = []
    for threads in (1, THREADS):
        con.execute(f"SET threads = {threads}")
        got.append([c.quantiles for c in profile.profile_table(con, "t").columns])
    assert got[0] == got[1]
    kept = con.execute("SELECT quantile_disc(CAST(value AS DOUBLE), [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]) "
                       "FROM t WHERE hash(rowid) % 10 = 0").fetchone()[0]
    assert got[0][1] == [round(q, 6) for q in kept]


def test_flattened_children_keep_file_order(tmp_path: Path) -> None:
    """A child table's rows are its parents' rows in file order, each parent's elements in
    their own order: the row order the profile's sample and deciles read."""
    orders = _orders(6000, keyed=False)
    path = tmp_path / "orders.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in orders), encoding="utf-8")
    con = duckdb.connect(config={"preserve_insertion_order": True})
    con.execute(f"SET threads = {THREADS}")
    entries = read_json_source(con, path, "orders", "src_0", "jsonl", tmp_path)
    lines = next(e for e in entries if e.name == "orders_lines")
    got = con.execute(f"SELECT row_no, ordinal, sku FROM {lines.table} ORDER BY rowid").fetchall()
    want = [(parent, ordinal, line["sku"]) for parent, order in enumerate(orders, start=1)
            for ordinal, line in enumerate(order["lines"], start=1)]
    assert got == want
