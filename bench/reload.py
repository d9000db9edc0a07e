"""Benchmark: incremental reload after one file of ten changes vs a full build.

    python bench/reload.py [--rows N] [--files K] [--keep DIR]

Ten seeded CSV files (``--rows`` each, default 100,000) of unrelated tables. Measured in this
run, each in a fresh process: a full build (interpret, plan, load, validate: `dia build
--full`), then, after one file's values change (same row count), the incremental build
(`dia build`, the default), and a full build of the changed folder in a new workspace. The
ratio is the incremental build over the faster of the two full builds. Targets: at most 1/5
of a full build; the reload must reload exactly the changed file's table and be accepted.
Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.peak import in_child  # noqa: E402

TARGET_RATIO = 0.2
MEMORY_LIMIT = os.environ.setdefault("DIA_MEMORY_LIMIT", "1536MB")  # as bench/interpret.py and bench/load.py
NAMES = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
         "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"]


def make_csv(path: Path, name: str, rows: int, seed: int) -> None:
    """Unrelated tables (no shared key names): a key, a code with leading zeros, a decimal,
    a date, a category and a nullable note."""
    con = duckdb.connect()
    con.execute("SET enable_progress_bar = false")
    con.execute(
        f"""COPY (
            SELECT i + 1 AS {name}_id,
                   lpad(CAST(hash(i, {seed}, 1) % 100000 AS VARCHAR), 6, '0') AS {name}_code,
                   CAST((hash(i, {seed}, 2) % 1000000) / 100.0 AS DECIMAL(12, 2)) AS amount,
                   DATE '2020-01-01' + CAST(hash(i, {seed}, 3) % 2000 AS INTEGER) AS day,
                   ['north', 'south', 'east', 'west'][CAST(hash(i, {seed}, 4) % 4 AS INTEGER) + 1] AS region,
                   CASE WHEN hash(i, {seed}, 5) % 10 = 0 THEN NULL
                        ELSE 'note ' || CAST(hash(i, {seed}, 6) % 997 AS VARCHAR) END AS note
            FROM range({rows}) t(i)
        ) TO '{path}' (HEADER, DELIMITER ',')"""
    )
    con.close()


def _build(data: Path, ws: Path, incremental: bool) -> dict:
    """`dia build` (incremental) or `dia build --full`, timed as a whole."""
    from dia_assets.pipeline import run

    start = time.perf_counter()
    result = run(data, ws, incremental=incremental)
    elapsed = time.perf_counter() - start
    reload = result.report.reload
    return {"s": elapsed, "accepted": result.report.accepted, "mode": reload.mode if reload else None,
            "reloaded": reload.reloaded if reload else [], "fallback": reload.fallback if reload else None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000, help="rows per file")
    parser.add_argument("--files", type=int, default=10)
    parser.add_argument("--keep", type=Path, default=None, help="keep the data and workspaces here")
    args = parser.parse_args()

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    tmp = Path(args.keep or tempfile.mkdtemp(prefix="dia-bench-reload-"))
    try:
        data = tmp / "data"
        data.mkdir(parents=True)
        names = NAMES[: args.files]
        for seed, name in enumerate(names):
            make_csv(data / f"{name}.csv", name, args.rows, seed)
        full, peak_full = in_child(_build, data, tmp / "ws", False)
        log(f"{args.files} files x {args.rows:,} rows: full build {full['s']:.2f}s "
            f"(peak {peak_full / 2**20:,.0f} MB)")
        changed = names[len(names) // 2]
        make_csv(data / f"{changed}.csv", changed, args.rows, 1000)  # new values, same shape
        quick, peak_quick = in_child(_build, data, tmp / "ws", True)
        log(f"one file changed ({changed}.csv): incremental build {quick['s']:.2f}s, reloaded "
            f"{quick['reloaded']} (mode {quick['mode']}{', ' + quick['fallback'] if quick['fallback'] else ''}); "
            f"peak {peak_quick / 2**20:,.0f} MB")
        again, _ = in_child(_build, data, tmp / "ws_full", False)
        baseline = min(full["s"], again["s"])
        ratio = quick["s"] / baseline
        log(f"full build of the changed folder {again['s']:.2f}s; reload / full = {ratio:.3f} "
            f"(target <= {TARGET_RATIO})")
        figures = {
            "files": args.files, "rows_per_file": args.rows, "full_build_s": round(full["s"], 3),
            "full_build_changed_s": round(again["s"], 3), "incremental_s": round(quick["s"], 3),
            "ratio": round(ratio, 3), "reloaded": quick["reloaded"], "mode": quick["mode"],
            "accepted": quick["accepted"] and full["accepted"] and again["accepted"],
            "peak_mb_full": round(peak_full / 2**20, 1), "peak_mb_incremental": round(peak_quick / 2**20, 1),
            "memory_limit": MEMORY_LIMIT,
        }
        met = (ratio <= TARGET_RATIO and figures["accepted"] and quick["mode"] == "incremental"
               and quick["reloaded"] == [changed])
        targets = {"ratio_max": TARGET_RATIO, "reloaded": [changed], "mode": "incremental", "accepted": True}
        print(json.dumps({"bench": "reload", "figures": figures, "targets": targets, "met": met}), flush=True)
        return 0 if met else 1
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
