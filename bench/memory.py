"""Benchmark: the shared memory on the embedded PostgreSQL + pgvector, in one run.

Generates `--items` seeded question/SQL examples from templates (100,000 by default; all
distinct), then on a fresh embedded server in a temporary folder measures:

* bulk import: WordLlama embedding, COPY, and building the HNSW and full-text indexes
  after the load (target: at most 90 s for 100,000 examples, embedding included);
* hybrid retrieval top-10 latency over `--queries` unseen questions, query embedding
  included, after a short warm-up (target: p50 at most 20 ms);
* vector recall@10 of the HNSW index against exact search on the same queries (target: at
  least 0.95). Ties are common in templated text, so a returned item counts as a hit when
  its exact distance is within 1e-6 of the 10th exact neighbour's (as ann-benchmarks does).

Run:
    .venv/bin/python bench/memory.py [--items N] [--queries Q] [--ef-search E]

The last line of output is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from dia_assets.platform.memory import Kind, MemoryStore, NewMemory, Tier, WordLlamaEmbedder
from dia_assets.platform.memory.migrations import SCHEMA

IMPORT_MAX_S = 90.0
P50_MAX_MS = 20.0
RECALL_MIN = 0.95

ENTITIES = [
    "customers",
    "orders",
    "schools",
    "patients",
    "movies",
    "players",
    "flights",
    "products",
    "employees",
    "students",
    "invoices",
    "accounts",
    "stores",
    "suppliers",
    "drivers",
    "loans",
    "hospitals",
    "teams",
    "books",
    "artists",
    "cities",
    "vehicles",
    "courses",
    "shipments",
]
MEASURES = [
    "revenue",
    "price",
    "score",
    "rating",
    "salary",
    "duration",
    "weight",
    "balance",
    "enrollment",
    "attendance",
    "distance",
    "quantity",
    "age",
    "budget",
    "margin",
    "tax",
]
PLACES = [
    "California",
    "Texas",
    "Alameda county",
    "Europe",
    "the north region",
    "Paris",
    "Tokyo",
    "Fresno",
    "the east coast",
    "Germany",
    "Brazil",
    "Ontario",
    "the main campus",
    "Lagos",
]
GROUPS = [
    "category",
    "region",
    "year",
    "month",
    "department",
    "country",
    "status",
    "gender",
    "segment",
    "channel",
    "brand",
    "grade",
]
TEMPLATES = [
    (
        "How many {e} had {m} above {n} in {p} during {y}?",
        "SELECT count(*) FROM {e} WHERE {m} > {n} AND place = '{p}' AND year = {y}",
        Kind.AGGREGATION,
    ),
    (
        "What is the average {m} of {e} per {g} in {y}?",
        "SELECT {g}, avg({m}) FROM {e} WHERE year = {y} GROUP BY {g}",
        Kind.AGGREGATION,
    ),
    (
        "List the top {n} {e} by {m} in {p}.",
        "SELECT id FROM {e} WHERE place = '{p}' ORDER BY {m} DESC LIMIT {n}",
        Kind.OUTPUT_CONVENTION,
    ),
    (
        "Which {e} in {p} has the highest {m} among those with {g} {n}?",
        "SELECT id FROM {e} WHERE place = '{p}' AND {g} = {n} ORDER BY {m} DESC LIMIT 1",
        Kind.FILTER,
    ),
    (
        "For each {g}, what share of {e} in {y} had {m} below {n}?",
        "SELECT {g}, avg(({m} < {n})::int) FROM {e} WHERE year = {y} GROUP BY {g}",
        Kind.FORMULA,
    ),
    (
        "Show {e} joined with their {g} records where {m} exceeds {n} in {p}.",
        "SELECT e.id, g.* FROM {e} e JOIN {g}s g ON g.id = e.{g}_id WHERE e.{m} > {n} AND e.place = '{p}'",
        Kind.JOIN,
    ),
]


def generate(count: int, seed: int) -> list[NewMemory]:
    """`count` distinct templated examples; the seed fixes the set."""
    rng = random.Random(seed)
    seen: set[str] = set()
    items: list[NewMemory] = []
    while len(items) < count:
        q_tpl, sql_tpl, kind = rng.choice(TEMPLATES)
        values = {
            "e": rng.choice(ENTITIES),
            "m": rng.choice(MEASURES),
            "p": rng.choice(PLACES),
            "g": rng.choice(GROUPS),
            "y": rng.randint(1990, 2024),
            "n": rng.randint(1, 500),
        }
        question = q_tpl.format(**values)
        if question in seen:
            continue
        seen.add(question)
        items.append(
            NewMemory(
                tier=Tier.EXAMPLE,
                kind=kind,
                title=question,
                question=question,
                body=sql_tpl.format(**values),
                scope="db-bench",
            )
        )
    return items


def measure_retrieval(store: MemoryStore, questions: list[str], warmup: int = 20) -> list[float]:
    for q in questions[:warmup]:
        store.retrieve(q, k=10)
    latencies = []
    for q in questions:
        start = time.perf_counter()
        refs = store.retrieve(q, k=10)
        latencies.append((time.perf_counter() - start) * 1000.0)
        assert len(refs) == 10
    return latencies


def measure_recall(store: MemoryStore, questions: list[str]) -> float:
    conn = store.connection()
    vectors = store.embedder.embed(questions)
    hits = total = 0
    for vec in vectors:
        ann = conn.execute(
            f"SELECT id FROM {SCHEMA}.items ORDER BY embedding <=> %s LIMIT 10", (vec,)
        ).fetchall()
        exact = conn.execute(
            f"""WITH c AS MATERIALIZED (SELECT id, embedding FROM {SCHEMA}.items)
                SELECT id, embedding <=> %s AS d FROM c ORDER BY d LIMIT 10""",
            (vec,),
        ).fetchall()
        threshold = exact[-1][1] + 1e-6
        ann_ids = [r[0] for r in ann]
        dists = dict(
            conn.execute(
                f"SELECT id, embedding <=> %s FROM {SCHEMA}.items WHERE id = ANY(%s)",
                (vec, ann_ids),
            ).fetchall()
        )
        hits += sum(1 for i in ann_ids if dists[i] <= threshold)
        total += 10
    return hits / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ef-search", type=int, default=80)
    args = parser.parse_args()

    base = Path(tempfile.mkdtemp(prefix="dia-bench-memory-"))
    try:
        t = time.perf_counter()
        embedder = WordLlamaEmbedder()
        store = MemoryStore.open(
            pgdata=base / "pgdata", embedder=embedder, ef_search=args.ef_search
        )
        print(
            f"embedded server up and migrated in {time.perf_counter() - t:.1f} s ({store.describe()})"
        )

        t = time.perf_counter()
        items = generate(args.items, seed=7)
        print(f"generated {len(items):,} examples in {time.perf_counter() - t:.1f} s")
        report = store.import_examples(items)
        assert report.inserted == args.items, report
        secs = report.seconds
        print(
            f"bulk import: {report.inserted:,} rows in {secs['total']:.1f} s "
            f"(embed {secs['embed']:.1f} s, load {secs['load']:.1f} s, index {secs['index']:.1f} s)"
        )

        # unseen questions from the same distribution (different seed, not in the store)
        stored = {i.question for i in items}
        queries = [
            q.question for q in generate(args.queries * 3, seed=99) if q.question not in stored
        ]
        queries = queries[: args.queries]
        latencies = measure_retrieval(store, queries)
        p50 = statistics.median(latencies)
        p95 = float(np.percentile(latencies, 95))
        print(
            f"hybrid retrieval top-10 over {len(latencies)} queries: p50 {p50:.1f} ms, p95 {p95:.1f} ms"
        )

        recall = measure_recall(store, queries)
        print(f"vector recall@10 (HNSW, ef_search {args.ef_search}) vs exact: {recall:.3f}")
        store.close()
    finally:
        server = getattr(locals().get("store"), "target", None)
        if server is not None and server._embedded is not None:
            server._embedded.stop()
        shutil.rmtree(base, ignore_errors=True)

    figures = {
        "items": args.items,
        "import_s": secs["total"],
        "import_embed_s": secs["embed"],
        "import_load_s": secs["load"],
        "import_index_s": secs["index"],
        "retrieval_p50_ms": round(p50, 2),
        "retrieval_p95_ms": round(p95, 2),
        "recall_at_10": round(recall, 4),
        "ef_search": args.ef_search,
    }
    targets = {
        "import_s": f"<= {IMPORT_MAX_S}",
        "retrieval_p50_ms": f"<= {P50_MAX_MS}",
        "recall_at_10": f">= {RECALL_MIN}",
    }
    met = secs["total"] <= IMPORT_MAX_S and p50 <= P50_MAX_MS and recall >= RECALL_MIN
    print(json.dumps({"bench": "memory", "figures": figures, "targets": targets, "met": met}))


if __name__ == "__main__":
    main()
