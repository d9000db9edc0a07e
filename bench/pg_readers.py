"""Benchmark: a reader's latency on a PostgreSQL warehouse while a build installs new tables.

    python bench/pg_readers.py [--rows N] [--rounds R]

On the embedded PostgreSQL, a seeded `orders` table (``--rows``, default 300,000) and its
`customers` are built once; then, in this run, each mode rebuilds the same manifest while a
reader thread runs `SELECT count(*), sum(total) FROM orders` back to back (one statement per
transaction, as the Query Generator does):

* `swap`: today's loader (schema_creator/postgres.py): copy into build schemas, validate there,
  install by a short swap transaction;
* `baseline`: the previous loader, kept here: drop and recreate the tables and copy the rows
  in one transaction (readers wait for its exclusive locks until the commit), then validate.

Then `events.csv` (a third table, ``--rows``/3, referenced by none) changes: a whole `dia build`
(incremental: only `events` is rebuilt and swapped, the others stay installed) against a full
one of the same files (`dia build --full`), with the reader running through both.

Figures: the reader's worst and p99 latency during each build, its latency with no build
running, the build times, the incremental/full ratio and the machine's load average. Target: worst latency under 0.5 s with
the swap. Ends with one JSON line.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402
import psycopg  # noqa: E402
from psycopg.conninfo import make_conninfo  # noqa: E402

from dia_assets.agents.schema_creator import postgres as pgload  # noqa: E402
from dia_assets.agents.schema_creator.load import build_into  # noqa: E402
from dia_assets.agents.schema_creator.validate import validate  # noqa: E402
from dia_assets.contracts.manifest import Manifest  # noqa: E402
from dia_assets.pipeline import run  # noqa: E402
from dia_assets.platform import limits  # noqa: E402
from dia_assets.platform.memory.server import EmbeddedServer  # noqa: E402
from dia_assets.platform.naming import quote_ident as q  # noqa: E402
from dia_assets.platform.tables.target import Target  # noqa: E402
from dia_assets.platform.workspace import Workspace  # noqa: E402

TARGET_WORST_S = 0.5
QUERY = "SELECT count(*), sum(total) FROM orders"


def make_data(data: Path, rows: int) -> None:
    rng = random.Random(7)
    data.mkdir(parents=True, exist_ok=True)
    with (data / "customers.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["customer_id", "name", "city"])
        w.writerows([i, f"Customer {i}", rng.choice(["Lyon", "Oslo", "Lima", "Pune"])] for i in range(1, 1001))
    with (data / "orders.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["order_id", "customer_id", "total", "ordered_on", "status"])
        w.writerows([o, rng.randint(1, 1000), f"{rng.uniform(1, 500):.2f}",
                     f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}", rng.choice(["new", "paid", "sent"])]
                    for o in range(1, rows + 1))


def make_events(data: Path, rows: int, seed: int) -> None:
    """A table no other references: changing it alone is an incremental reload of it alone."""
    rng = random.Random(seed)
    with (data / "events.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["event_id", "kind", "value"])
        w.writerows([e, rng.choice(["view", "click", "buy"]), rng.randint(0, 10_000)] for e in range(1, rows + 1))


def baseline_load(manifest: Manifest, url: str) -> None:
    """The loader before the swap: drop and recreate every table in one transaction."""
    with tempfile.TemporaryDirectory(prefix="dia-bench-pg-") as tmp:
        con = duckdb.connect(str(Path(tmp) / "build.duckdb"))
        limits.plan_linearly(con)
        try:
            result = build_into(con, manifest, manifest.data_dir)
            with psycopg.connect(url) as pg, pg.transaction(), pg.cursor() as cur:
                cur.execute("CREATE SCHEMA IF NOT EXISTS staging")
                cur.execute("CREATE SCHEMA IF NOT EXISTS rejects")
                for table in reversed(manifest.tables):
                    for _, pg_name, _, _ in pgload._layers(table, False):
                        cur.execute(f"DROP TABLE IF EXISTS {pg_name} CASCADE")
                for table in manifest.tables:
                    stats = result.tables[table.name]
                    for duck_name, pg_name, columns, pk in pgload._layers(table, stats.primary_key_enforced):
                        cur.execute(pgload.pg_table_ddl(pg_name, columns, pk))
                        pgload._copy(con, cur, table, duck_name, pg_name, ", ".join(q(c) for c, _ in columns))
                for table in manifest.tables:
                    enforced = result.tables[table.name].foreign_keys_enforced
                    for fk in table.foreign_keys:
                        if f"({', '.join(fk.columns)}) -> {fk.ref_table}" in enforced:
                            cur.execute(pgload._fk_sql(table, fk))
        finally:
            con.close()
    with Target(url) as target:
        assert validate(target, manifest).accepted


def swap_load(manifest: Manifest, url: str) -> None:
    def accept(schemas: dict[str, str]) -> bool:
        with Target(url, schemas=schemas) as target:
            return validate(target, manifest).accepted

    result = pgload.load_postgres(manifest, manifest.data_dir, url, check=accept)
    assert result.installed


class Reader(threading.Thread):
    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.stop = url, threading.Event()
        self.latencies: list[float] = []
        self.counts: set[int] = set()
        self.errors = 0

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as con:
            while not self.stop.is_set():
                t = time.perf_counter()
                try:
                    self.counts.add(con.execute(QUERY).fetchone()[0])
                except psycopg.Error:
                    self.errors += 1
                self.latencies.append(time.perf_counter() - t)


def measure(url: str, build) -> dict:
    reader = Reader(url)
    reader.start()
    time.sleep(0.3)  # the reader is running before the build starts
    t = time.perf_counter()
    if build is None:
        time.sleep(3.0)
    else:
        build()
    secs = time.perf_counter() - t
    reader.stop.set()
    reader.join(60)
    lat = sorted(reader.latencies)
    p99 = lat[min(len(lat) - 1, int(0.99 * len(lat)))]
    return {"worst_s": round(lat[-1], 3), "p99_s": round(p99, 3), "p50_s": round(lat[len(lat) // 2], 4),
            "reads": len(lat), "errors": reader.errors, "build_s": round(secs, 2), "counts": sorted(reader.counts)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    base = Path(tempfile.mkdtemp(prefix="dia-bench-pgreaders-"))
    server = EmbeddedServer(base / "pgdata")
    try:
        admin = server.uri()
        with psycopg.connect(admin, autocommit=True) as con:
            con.execute("CREATE DATABASE bench")
        url = make_conninfo(admin, dbname="bench")
        make_data(base / "data", args.rows)
        make_events(base / "data", args.rows // 3, seed=1)
        t = time.perf_counter()
        first = run(base / "data", base / "ws", warehouse=url)
        assert first.report.accepted, first.report.axes
        print(f"first build ({args.rows:,} orders) in {time.perf_counter() - t:.1f} s", flush=True)
        manifest = Manifest.read(Workspace(base / "ws").manifest)
        runs: dict[str, list[dict]] = {"idle": [], "baseline": [], "swap": []}
        for _ in range(args.rounds):  # alternating, so both modes see the same machine
            for mode, build in (("idle", None), ("baseline", lambda: baseline_load(manifest, url)),
                                ("swap", lambda: swap_load(manifest, url))):
                runs[mode].append(measure(url, build))
                print(mode, json.dumps(runs[mode][-1]), flush=True)
        # Incremental reload: only events.csv changes; orders and customers stay installed.
        make_events(base / "data", args.rows // 3, seed=2)
        done: list = []
        runs["incremental"] = [measure(url, lambda: done.append(run(base / "data", base / "ws", warehouse=url,
                                                                    incremental=True)))]
        reload = done[-1].report.reload
        assert done[-1].report.installed and reload.reloaded == ["events"], reload
        print("incremental", json.dumps(runs["incremental"][-1]), reload.kept, flush=True)
        runs["full"] = [measure(url, lambda: done.append(run(base / "data", base / "ws", warehouse=url)))]
        assert done[-1].report.installed and done[-1].report.reload.mode == "full"
        print("full", json.dumps(runs["full"][-1]), flush=True)
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)

    def worst(mode: str, key: str) -> float:
        return max(r[key] for r in runs[mode])

    figures = {
        "rows": args.rows, "rounds": args.rounds,
        "swap_worst_latency_s": worst("swap", "worst_s"), "swap_p99_latency_s": worst("swap", "p99_s"),
        "baseline_worst_latency_s": worst("baseline", "worst_s"),
        "baseline_p99_latency_s": worst("baseline", "p99_s"),
        "idle_worst_latency_s": worst("idle", "worst_s"), "idle_p50_latency_s": worst("idle", "p50_s"),
        "swap_build_s": min(r["build_s"] for r in runs["swap"]),
        "baseline_build_s": min(r["build_s"] for r in runs["baseline"]),
        "incremental_worst_latency_s": worst("incremental", "worst_s"),
        "incremental_build_s": runs["incremental"][0]["build_s"], "full_build_s": runs["full"][0]["build_s"],
        "incremental_ratio": round(runs["incremental"][0]["build_s"] / runs["full"][0]["build_s"], 3),
        "reader_errors": sum(r["errors"] for rs in runs.values() for r in rs),
        "load_avg_start": round(load_start, 1), "load_avg_end": round(os.getloadavg()[0], 1),
    }
    met = (figures["swap_worst_latency_s"] < TARGET_WORST_S and figures["incremental_worst_latency_s"] < TARGET_WORST_S
           and figures["reader_errors"] == 0)
    print(json.dumps({"bench": "pg_readers", "figures": figures, "targets": {"worst_latency_s": TARGET_WORST_S},
                      "met": met}))


if __name__ == "__main__":
    main()
