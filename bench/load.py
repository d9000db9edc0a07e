"""Benchmark: load + validate a seeded 1M-row CSV vs a bare DuckDB CTAS of the same file.

    python bench/load.py [--rows N] [--keep DIR]

Both are measured in this run on the same file. The Schema Creator's time covers the
plan, staging (all text + provenance + content hash), typed refined table with its
primary key, rejects, and the full validation report; the interpreter runs first and
is reported but not counted (it is its own step). Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import duckdb

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_RATIO = 3.0


def make_csv(path: Path, rows: int) -> None:
    """Deterministic messy-but-clean data: codes with leading zeros, decimals, dates, categories."""
    con = duckdb.connect()
    con.execute(
        f"""COPY (
            SELECT i + 1 AS order_id,
                   lpad(CAST(hash(i, 1) % 100000 AS VARCHAR), 6, '0') AS customer_code,
                   CAST((hash(i, 2) % 1000000) / 100.0 AS DECIMAL(12, 2)) AS amount,
                   DATE '2020-01-01' + CAST(hash(i, 3) % 2000 AS INTEGER) AS order_date,
                   ['north', 'south', 'east', 'west'][CAST(hash(i, 4) % 4 AS INTEGER) + 1] AS region,
                   CASE WHEN hash(i, 5) % 10 = 0 THEN NULL ELSE 'note ' || CAST(hash(i, 6) % 997 AS VARCHAR) END AS note
            FROM range({rows}) t(i)
        ) TO '{path}' (HEADER, DELIMITER ',')"""
    )
    con.close()


def bare_ctas(csv_path: Path, db: Path) -> float:
    start = time.perf_counter()
    con = duckdb.connect(str(db))
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_csv('{csv_path}')").fetchall()
    con.execute("CHECKPOINT").fetchall()
    con.close()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--keep", type=Path, default=None, help="keep the workspace here")
    args = parser.parse_args()

    from dia_assets.agents.interpreter import interpret
    from dia_assets.agents.schema_creator.build import (
        load_warehouse,
        validate_warehouse,
        write_plan,
    )

    tmp = Path(tempfile.mkdtemp(prefix="dia-bench-load-"))
    try:
        data = tmp / "data"
        data.mkdir()
        csv_path = data / "orders.csv"
        make_csv(csv_path, args.rows)
        t0 = time.perf_counter()
        interp = interpret(data)
        interpret_s = time.perf_counter() - t0

        baseline_s = bare_ctas(csv_path, tmp / "bare.duckdb")
        ws = tmp / "ws"
        start = time.perf_counter()
        manifest, _ = write_plan(interp, ws)
        plan_s = time.perf_counter() - start
        loaded = load_warehouse(manifest, str(ws / "warehouse.duckdb"))
        load_s = time.perf_counter() - start - plan_s
        report = validate_warehouse(manifest, str(ws / "warehouse.duckdb"), ws, interp)
        ours_s = time.perf_counter() - start
        validate_s = ours_s - plan_s - load_s
        # the baseline again, after ours, so neither side profits from a warm cache alone
        baseline_s = min(baseline_s, bare_ctas(csv_path, tmp / "bare2.duckdb"))
        table = loaded.tables["orders"]
        ratio = ours_s / baseline_s if baseline_s else float("inf")
        figures = {
            "rows": args.rows,
            "csv_mb": round(csv_path.stat().st_size / 1e6, 1),
            "bare_ctas_s": round(baseline_s, 3),
            "load_and_validate_s": round(ours_s, 3),
            "ratio": round(ratio, 2),
            "plan_s": round(plan_s, 3),
            "load_s": round(load_s, 3),
            "validate_s": round(validate_s, 3),
            "interpret_s_not_counted": round(interpret_s, 3),
            "refined": table.refined,
            "rejected": table.rejected,
            "accepted": report.accepted,
        }
        targets = {"ratio_max": TARGET_RATIO, "accepted": True}
        met = ratio <= TARGET_RATIO and report.accepted and table.refined == args.rows
        print(f"bare CTAS {baseline_s:.2f}s, load+validate {ours_s:.2f}s, ratio {ratio:.2f} (target <= {TARGET_RATIO})",
              file=sys.stderr)
        if args.keep:
            shutil.copytree(ws, args.keep, dirs_exist_ok=True)
        print(json.dumps({"bench": "load", "figures": figures, "targets": targets, "met": met}))
        return 0 if met else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
