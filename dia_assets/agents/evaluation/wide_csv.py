"""Seeded wide CSV files: how the build scales with the number of columns (bench/wide.py and
tests/faults/test_wide_tables.py draw their files here; neither imports the other)."""

from __future__ import annotations

import random
from datetime import date, timedelta
from pathlib import Path

KINDS = ("int", "float", "text", "date")
WORDS = ("red", "green", "blue", "amber", "violet", "cyan", "ochre", "teal")


def wide_names(columns: int) -> list[str]:
    """`id`, then `c00001_float`, `c00002_text`, ...: each name says its column's kind."""
    return ["id"] + [f"c{i:05d}_{KINDS[i % 4]}" for i in range(1, columns)]


def write_wide_csv(path: Path, columns: int, rows: int, seed: int = 0) -> Path:
    """`columns` columns (an `id` key 1..rows, then integers 0-999, decimals with two places,
    words with a number, ISO dates in turn) by `rows` rows, the same for the same seed."""
    rng = random.Random(seed)
    start = date(2020, 1, 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as fh:
        fh.write(",".join(wide_names(columns)) + "\n")
        for r in range(rows):
            cells = [str(r + 1)]
            for i in range(1, columns):
                kind = i % 4
                if kind == 0:
                    cells.append(str(rng.randrange(1000)))
                elif kind == 1:
                    cells.append(f"{rng.randrange(100000) / 100:.2f}")
                elif kind == 2:
                    cells.append(f"{WORDS[rng.randrange(len(WORDS))]}{rng.randrange(50)}")
                else:
                    cells.append((start + timedelta(days=rng.randrange(2000))).isoformat())
            fh.write(",".join(cells) + "\n")
    return path
