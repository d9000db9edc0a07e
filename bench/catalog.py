"""Benchmark: does `dia catalog search` rank the column a plain question is about first? (issue 29)

Questions: `bench/data/catalog_questions.jsonl`, plain questions in a user's words (never the
column's name verbatim: checked here) over the ../shared/datasets databases, each with the
column(s) that answer it as `table.column` (any of them counts).

For every dataset: the Schema Creator builds the warehouse (`dia build`'s `run`), the catalog is
built from its interpretation and manifest into a fresh embedded PostgreSQL + pgvector
(`refresh_catalog`, what `dia catalog build` runs), and each question goes through
`CatalogStore.search` as `dia catalog search` calls it (every level). Column hits are the
attribute nodes among the results, in order; a question's reciprocal rank is 1/r for the first
acceptable column at column rank r <= 5, else 0. MRR@5 is their mean, overall and per dataset.

`pagila` (DVD rentals, the domain nearest the music store of the issue) was held out while the
ranking was tuned: it is reported apart and is not part of the tuned figure, and the target
applies to both. TPC-H was held out as well for the later changes (the lexicon's settings, lemma
alignment, rarity-weighted alignment, the count type), chosen on hr, classicmodels and Northwind
only; `per_dataset` gives what each split needs.

Run:
    .venv/bin/python bench/catalog.py [--datasets ../shared/datasets] [--warehouses DIR] [--show]

`--warehouses DIR` keeps the built warehouses there and reuses them on the next run. The last
line of output is one JSON object: {"bench", "figures", "targets", "met"}.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dia_assets.agents.catalog.build import humanize  # noqa: E402
from dia_assets.agents.catalog.refresh import refresh_catalog  # noqa: E402
from dia_assets.agents.catalog.store import CatalogStore  # noqa: E402
from dia_assets.agents.evaluation.retrieval import reciprocal_rank  # noqa: E402

QUESTIONS = ROOT / "bench" / "data" / "catalog_questions.jsonl"
HELD_OUT = ("pagila",)
K = 5
SEARCH_DEPTH = 40  # nodes asked for, so that at least K column hits remain after dropping tables
MIN_QUESTIONS = 40
TARGETS = {"mrr5_min": 0.8}


def mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


def load_questions(path: Path = QUESTIONS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def verbatim(question: str, columns: list[str]) -> list[str]:
    """Answer columns whose whole name (humanised) appears in the question: not a plain question."""
    text = " " + re.sub(r"[^a-z0-9]+", " ", question.lower()) + " "
    return [c for c in columns if f" {humanize(c.split('.', 1)[1])} " in text]


def build_warehouse(name: str, raw: Path, out: Path) -> tuple[Path, Path, str]:
    """(workspace, warehouse, how): reused when `out` already holds a finished build."""
    from dia_assets.pipeline import run
    from dia_assets.platform.workspace import Workspace

    ws, target = out / f"{name}_ws", out / f"{name}.duckdb"
    if Workspace(ws).manifest.exists() and target.exists():
        return ws, target, "reused"
    run(raw, ws, warehouse=str(target))
    return ws, target, "dia build"


def column_ranking(store: CatalogStore, question: str, scope: str) -> list[str]:
    """`table.column` of the attribute hits, best first, as `dia catalog search` ranks them."""
    hits = store.search(question, scope=scope, k=SEARCH_DEPTH)
    return [f"{h.node.table}.{h.node.column}" for h in hits if h.node.level == "attribute"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=Path, default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--warehouses", type=Path, default=None)
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--show", action="store_true", help="print each question's top columns")
    args = parser.parse_args()

    from dia_assets.platform.embeddings import WordLlamaEmbedder
    from dia_assets.platform.memory.store import MemoryStore

    questions = load_questions(args.questions)
    unplain = {q["id"]: verbatim(q["question"], q["columns"]) for q in questions}
    unplain = {k: v for k, v in unplain.items() if v}
    by_db: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in questions:
        by_db[q["db"]].append(q)

    tmp = Path(tempfile.mkdtemp(prefix="dia-bench-catalog-"))
    out = args.warehouses or tmp / "warehouses"
    out.mkdir(parents=True, exist_ok=True)
    rr: dict[str, list[float]] = defaultdict(list)
    first: dict[str, int] = defaultdict(int)
    builds, misses = {}, []
    t0 = time.perf_counter()
    try:
        store = MemoryStore.open(pgdata=tmp / "pgdata", embedder=WordLlamaEmbedder())
        catalog = CatalogStore(store)
        for db, items in by_db.items():
            ws, target, how = build_warehouse(db, args.datasets / db / "raw", out)
            built = refresh_catalog(ws, str(target), store)
            builds[db] = {"how": how, "columns": built.counts()["attribute"]}
            for q in items:
                ranked = column_ranking(catalog, q["question"], built.scope)
                score = reciprocal_rank(ranked, q["columns"], K)
                rr[db].append(score)
                first[db] += score == 1.0
                if score < 1.0:
                    misses.append({"id": q["id"], "want": q["columns"], "top": ranked[:3]})
                if args.show:
                    print(f"{score:.2f} {q['id']:<16} {q['question']}\n      want {q['columns']} got {ranked[:K]}")
        store.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    tuned = [s for db, v in rr.items() if db not in HELD_OUT for s in v]
    held = [s for db, v in rr.items() if db in HELD_OUT for s in v]
    figures = {
        "questions": len(questions),
        "mrr5_tuned": mean(tuned),
        "mrr5_held_out": mean(held),
        "held_out": list(HELD_OUT),
        "mrr5_all": mean(tuned + held),
        "first_all": f"{sum(first.values())}/{len(questions)}",
        "per_dataset": {db: {"mrr5": mean(v), "first": f"{first[db]}/{len(v)}"} for db, v in rr.items()},
        "not_plain_questions": unplain,
        "builds": builds,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    for m in misses:
        print(json.dumps({"miss": m}))
    met = (len(questions) >= MIN_QUESTIONS and not unplain and figures["mrr5_tuned"] >= TARGETS["mrr5_min"]
           and figures["mrr5_held_out"] >= TARGETS["mrr5_min"])
    print(json.dumps({"bench": "catalog", "figures": figures,
                      "targets": {**TARGETS, "questions_min": MIN_QUESTIONS}, "met": met}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
