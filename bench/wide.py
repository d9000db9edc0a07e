"""Benchmark: a whole `dia build` of one wide CSV at 100, 1,000 and 10,000 columns.

    python bench/wide.py [--rows N] [--sizes 100,1000,10000] [--keep DIR]

Each size is a seeded file (`dia_assets/agents/evaluation/wide_csv.py`: an `id` key, then
integer, decimal, text and date columns in turn) of ``--rows`` rows (default 2,000), built
from the raw file to the validation report (interpret, plan, load, validate: what `dia build`
runs) into DuckDB, in a fresh process whose peak memory (VmHWM) is reported, with the machine's
load average before and after (the figures mean little on a busy machine without it). A keyed
table over DIA_WIDE_SPLIT columns (default 1,000) is built as parts joined 1:1 on `id`: every
column and row is counted over the join of the parts. Targets: the
1,000-column build in under a minute; time per column at 1,000 at most twice that at 100
(linear in columns); the 10,000-column build accepted with every column, its peak within the
2 GB the other benches allow (DuckDB bounded by DIA_MEMORY_LIMIT, 1536MB unless set). Ends
with one JSON line.
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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.peak import in_child  # noqa: E402

MEMORY_LIMIT = os.environ.setdefault("DIA_MEMORY_LIMIT", "1536MB")  # as bench/load.py, for the same reason
THOUSAND_MAX_S = 60.0
PER_COLUMN_RATIO_MAX = 2.0
PEAK_MB_MAX = 2048.0


def _build(data: Path, ws: Path) -> dict:
    """One build, timed by step (the step hook marks when each begins)."""
    import duckdb

    from dia_assets.pipeline import run
    from dia_assets.platform.workspace import Workspace

    steps: dict[str, float] = {}
    start = time.perf_counter()
    result = run(data, ws, hook=lambda step: steps.setdefault(step.split(":")[0], time.perf_counter() - start))
    total = time.perf_counter() - start
    parts = result.manifest.table("wide").parts or ["wide"]  # a keyed table over DIA_WIDE_SPLIT is split
    with duckdb.connect(str(Workspace(ws).warehouse), read_only=True) as con:
        names = {r[0] for part in parts for r in con.execute(f"DESCRIBE {part}").fetchall()}
        columns = len(names)
        rows = {con.execute(f"SELECT count(*) FROM {part}").fetchone()[0] for part in parts}
        joined = con.execute(f"SELECT count(*) FROM wide {' '.join(f'JOIN {p} USING (id)' for p in parts[1:])}").fetchone()[0]
    return {"total": total, "steps": steps, "accepted": result.report.accepted, "columns": columns,
            "rows": joined if rows == {joined} else -1, "parts": len(parts)}


def measure(columns: int, rows: int, tmp: Path, log) -> dict:  # noqa: ANN001
    from dia_assets.agents.evaluation.wide_csv import write_wide_csv

    data = tmp / f"cols_{columns}" / "data"
    csv_path = write_wide_csv(data / "wide.csv", columns, rows)
    csv_mb = round(csv_path.stat().st_size / 1e6, 1)
    load_before = os.getloadavg()[0]
    ours, peak = in_child(_build, data, data.parent / "ws")
    load_after = os.getloadavg()[0]
    per_column_ms = ours["total"] / columns * 1000
    log(f"{columns:,} columns x {rows:,} rows ({csv_mb:.1f} MB): build {ours['total']:.1f}s "
        f"({per_column_ms:.1f} ms a column), peak {peak / 2**20:,.0f} MB, accepted {ours['accepted']}, "
        f"{ours['columns']:,} columns x {ours['rows']:,} rows in the warehouse ({ours['parts']} part(s) joined 1:1 on id); "
        f"load average {load_before:.1f} -> {load_after:.1f}; steps begin at "
        + ", ".join(f"{k} {v:.1f}s" for k, v in ours["steps"].items()))
    shutil.rmtree(data.parent, ignore_errors=True)
    return {"columns": columns, "rows": rows, "csv_mb": csv_mb, "build_s": round(ours["total"], 2), "ms_per_column": round(per_column_ms, 2),
            "peak_mb": round(peak / 2**20, 1), "accepted": ours["accepted"],
            "all_columns": ours["columns"] == columns and ours["rows"] == rows, "parts": ours["parts"],
            "load_avg_before": round(load_before, 1), "load_avg_after": round(load_after, 1),
            **{f"{k}_begins_s": round(v, 2) for k, v in ours["steps"].items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=2_000)
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--keep", type=Path, default=None, help="keep the files here")
    args = parser.parse_args()

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = Path(args.keep or tempfile.mkdtemp(prefix="dia-bench-wide-"))
    try:
        by_size = {n: measure(n, args.rows, tmp, log) for n in sizes}
        figures: dict = {"memory_limit": MEMORY_LIMIT, "rows": args.rows,
                         **{f"cols_{n}": fig for n, fig in by_size.items()}}
        met = all(f["accepted"] and f["all_columns"] and f["peak_mb"] <= PEAK_MB_MAX for f in by_size.values())
        if 100 in by_size and 1000 in by_size:
            ratio = by_size[1000]["ms_per_column"] / by_size[100]["ms_per_column"]
            figures["per_column_ratio_1000_vs_100"] = round(ratio, 2)
            log(f"time per column, 1,000 vs 100 columns: {ratio:.2f}x (target <= {PER_COLUMN_RATIO_MAX:g})")
            met = met and ratio <= PER_COLUMN_RATIO_MAX
        if 1000 in by_size:
            met = met and by_size[1000]["build_s"] < THOUSAND_MAX_S
        targets = {"build_s_1000_max": THOUSAND_MAX_S, "per_column_ratio_max": PER_COLUMN_RATIO_MAX,
                   "peak_mb_max": PEAK_MB_MAX, "accepted_with_every_column": True}
        print(json.dumps({"bench": "wide", "figures": figures, "targets": targets, "met": met}), flush=True)
        return 0 if met else 1
    finally:
        if args.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
