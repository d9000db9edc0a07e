"""Benchmark: primary and foreign keys on schemas nobody tuned on (issue: warehouse-style keys).

Scores the Data Interpreter, with its default settings, on:
- `--seeds` generated schemas (`dia_assets.agents.key_eval.generator`: 5-40 tables each, snake,
  camel, Pascal and upper-case names, table-prefixed columns, surrogate plus business keys,
  role-named, composite, self-references, 1:1 extensions, star and snowflake shapes, small
  integer columns whose values all occur in some key), seeds `--start` .. `--start + --seeds - 1`;
- every dataset under `--datasets` with a truth.json (the shared development datasets).

Each is scored as `../shared/datasets/score_keys.py` scores (FKs at confidence >= 0.8), and the
generated ones are broken down by the pattern each key exercises (recall per pattern; false
foreign keys by kind).

Targets (issue): on the generated schemas PK accuracy >= 0.97 and FK F1 >= 0.95; on the shared
datasets PK >= 0.98 and FK F1 >= 0.97.

Run:
    .venv/bin/python bench/keys.py [--seeds 200] [--start 1000] [--jobs 2] [--datasets ../shared/datasets]
                                   [--show-misses N] [--json-out F]

The last line of output is one JSON object: {"bench", "figures", "targets", "met"}.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dia_assets.agents.key_eval import (  # noqa: E402
    KeyScore,
    generate,
    score_interpretation,
    summarize,
    write_schema,
)

TARGETS = {"generated_pk_min": 0.97, "generated_fk_f1_min": 0.95, "shared_pk_min": 0.98, "shared_fk_f1_min": 0.97}


def _interpret(raw: Path) -> dict:
    from dia_assets.agents.interpreter import interpret

    return json.loads(interpret(raw).model_dump_json(by_alias=True))


def score_seed(seed: int) -> KeyScore:
    schema = generate(seed)
    with tempfile.TemporaryDirectory(prefix="dia-keys-") as tmp:
        raw = write_schema(schema, Path(tmp))
        truth = json.loads((Path(tmp) / "truth.json").read_text(encoding="utf-8"))
        return score_interpretation(truth, _interpret(raw), name=f"seed {seed} ({schema.shape}, {schema.convention.describe()})")


def score_dataset(folder: Path) -> KeyScore:
    truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))
    return score_interpretation(truth, _interpret(folder / "raw"), name=folder.name)


def _line(label: str, s: dict) -> str:
    return (f"{label}: PK {s['pk'][0]}/{s['pk'][1]} = {s['pk_accuracy']:.3f}; FK TP {s['fk']['tp']} FP {s['fk']['fp']} "
            f"FN {s['fk']['fn']}  P {s['fk_precision']:.3f} R {s['fk_recall']:.3f} F1 {s['fk_f1']:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--start", type=int, default=1000, help="first seed (tests use 0..19)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--datasets", type=Path, default=ROOT.parent / "shared" / "datasets")
    parser.add_argument("--show-misses", type=int, default=0, help="list the misses of the N worst schemas")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    started = time.perf_counter()
    seeds = list(range(args.start, args.start + args.seeds))
    with ProcessPoolExecutor(max_workers=args.jobs) as pool:
        generated = list(pool.map(score_seed, seeds))
        folders = sorted(p for p in args.datasets.glob("*") if (p / "truth.json").is_file()) if args.datasets.is_dir() else []
        shared = list(pool.map(score_dataset, folders))
    gen = summarize(generated)
    print(_line(f"generated ({len(seeds)} schemas, seeds {seeds[0]}..{seeds[-1]})", gen))
    print("  PK accuracy by pattern:   " + ", ".join(f"{p} {v:.3f} (n={gen['pattern_counts']['pk'][p]})"
                                                  for p, v in gen["pk_by_pattern"].items()))
    print("  FK recall by pattern:     " + ", ".join(f"{p} {v:.3f} (n={gen['pattern_counts']['fk'][p]})"
                                                  for p, v in gen["fk_recall_by_pattern"].items()))
    print(f"  false FKs by kind:        {gen['false_fk_kinds']}")
    for s in shared:
        print(_line(f"  {s.dataset}", summarize([s])))
        for m in s.pk_misses + [f"FK miss  {m}" for m in s.fk_missed] + [f"FK false {m}" for m in s.fk_false]:
            print(f"      {m}")
    sh = summarize(shared)
    if shared:
        print(_line(f"shared datasets ({len(shared)})", sh))
    if args.show_misses:
        worst = sorted(generated, key=lambda s: (s.pk_hits - s.pk_total) * 3 - s.fk_fp - s.fk_fn)[: args.show_misses]
        for s in worst:
            print(f"\n-- {s.dataset}: PK {s.pk_hits}/{s.pk_total}, FK TP {s.fk_tp} FP {s.fk_fp} FN {s.fk_fn}")
            for m in s.pk_misses:
                print(f"   PK miss  {m}")
            for m in s.fk_missed:
                print(f"   FK miss  {m}")
            for m in s.fk_false:
                print(f"   FK false {m}")
    figures = {
        "generated": {k: gen[k] for k in ("schemas", "pk_accuracy", "fk_precision", "fk_recall", "fk_f1",
                                          "pk_by_pattern", "fk_recall_by_pattern", "false_fk_kinds")},
        "generated_seeds": [seeds[0], seeds[-1]],
        "shared": {k: sh[k] for k in ("schemas", "pk_accuracy", "fk_precision", "fk_recall", "fk_f1")},
        "shared_by_dataset": {s.dataset: {"pk": [s.pk_hits, s.pk_total], "fk_f1": round(s.fk_f1, 4)} for s in shared},
        "elapsed_s": round(time.perf_counter() - started, 1),
    }
    met = (gen["pk_accuracy"] >= TARGETS["generated_pk_min"] and gen["fk_f1"] >= TARGETS["generated_fk_f1_min"]
           and (not shared or (sh["pk_accuracy"] >= TARGETS["shared_pk_min"]
                               and sh["fk_f1"] >= TARGETS["shared_fk_f1_min"])))
    verdict = {"bench": "keys", "figures": figures, "targets": TARGETS, "met": met}
    if args.json_out:
        args.json_out.write_text(json.dumps(verdict, indent=1), encoding="utf-8")
    print(json.dumps(verdict))
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
