"""Benchmark: the oracle answers every gold query on every engine (issue 28, "zero false refusals").

Every question set the project has (`examples/eval/questions.jsonl` over the example data,
`bench/data/verifier_questions.jsonl` over ../shared/datasets, and any `*_questions.jsonl` in
bench/data naming another dataset) is answered by the oracle model (gold SQL through the full
agent path: contract, gate, execution, verification) on DuckDB, SQLite and PostgreSQL.

Warehouses: DuckDB by the Schema Creator (`dia build`'s `run`); SQLite and PostgreSQL (embedded
pgserver) are copies of that warehouse's tables (`evaluation.engines`), so the three engines
hold the same data. Gold SQL is written for DuckDB and transpiled by the harness (sqlglot).

Every refusal is a bug (in a check or in a gold query's dialect) and is listed with the checks
that failed. Target: 100% EX and 0 refusals per engine.

Run:
    .venv/bin/python bench/oracle.py [--engines duckdb,sqlite,postgres] [--warehouses DIR] [--json-out F]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dia_assets.agents.evaluation.datasets import load_instances  # noqa: E402
from dia_assets.agents.evaluation.engines import copy_to_postgres, copy_to_sqlite  # noqa: E402
from dia_assets.agents.evaluation.runner import read_records, run_eval  # noqa: E402
from dia_assets.agents.evaluation.solvers import AgentSolver  # noqa: E402


def _has_gold(path: Path) -> bool:
    """A question set with gold SQL (catalog questions name columns instead)."""
    first = next((line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()), "{}")
    return "gold_sql" in json.loads(first)


QUESTION_SETS = [ROOT / "examples" / "eval" / "questions.jsonl",
                 *sorted(p for p in (ROOT / "bench" / "data").glob("*questions*.jsonl") if _has_gold(p))]


def build_duckdb(name: str, raw: Path, out: Path, overrides: Path | None = None) -> tuple[Path, str]:
    from dia_assets.pipeline import run

    target = out / f"{name}.duckdb"
    if target.exists():
        return target, "cached"
    try:
        run(raw, out / f"{name}_ws", warehouse=str(target), overrides_seed=overrides)
        return target, "dia build"
    except Exception as err:
        return target, f"dia build failed: {type(err).__name__}: {str(err)[:200]}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default=str(ROOT.parent / "shared" / "datasets"))
    ap.add_argument("--engines", default="duckdb,sqlite,postgres")
    ap.add_argument("--warehouses", help="folder for the warehouses (reused when present)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--json-out")
    args = ap.parse_args()
    started = time.perf_counter()
    out = Path(args.warehouses or tempfile.mkdtemp(prefix="dia_oracle_"))
    out.mkdir(parents=True, exist_ok=True)
    instances = [i for path in QUESTION_SETS if path.exists() for i in load_instances(path)]
    names = sorted({i.db for i in instances})
    datasets = Path(args.datasets)
    made: dict[str, str] = {}
    for name in names:
        if name == "hospital":
            _, made[name] = build_duckdb(name, ROOT / "examples" / "data", out, ROOT / "examples" / "data" / "overrides.yaml")
        else:
            _, made[name] = build_duckdb(name, datasets / name / "raw", out)
        print(f"{name}: {made[name]}", flush=True)
    engines = args.engines.split(",")
    specs: dict[str, str] = {"duckdb": str(out)}
    server = None
    if "sqlite" in engines:
        (out / "sqlite").mkdir(exist_ok=True)
        for name in names:
            if not (out / "sqlite" / f"{name}.sqlite").exists():
                copy_to_sqlite(out / f"{name}.duckdb", out / "sqlite" / f"{name}.sqlite")
        specs["sqlite"] = str(out / "sqlite")
    if "postgres" in engines:
        import psycopg

        from dia_assets.platform.memory.server import EmbeddedServer

        server = EmbeddedServer(Path(tempfile.mkdtemp(prefix="dia-oracle-pg-")) / "pgdata")
        uri = server.uri()
        for name in names:
            with psycopg.connect(uri, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # type: ignore[arg-type]
                conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
            copy_to_postgres(out / f"{name}.duckdb", _with_db(uri, name))
        specs["postgres"] = _with_db(uri, "{db}")
    figures: dict[str, Any] = {}
    try:
        for engine in engines:
            run_dir = out / f"run_{engine}"
            summary = run_eval(instances, specs[engine], AgentSolver("oracle"), run_dir, workers=args.workers,
                               ves_iterations=0, force=True)
            records = read_records(run_dir)
            refused = [{"id": r.id, "status": r.status, "why": (r.prediction.error if r.prediction else None)}
                       for r in records.values() if r.status != "correct"]
            figures[engine] = {"questions": len(instances), "correct": summary["correct"],
                               "scored": summary["scored"], "broken": summary["broken"], "ex": summary["ex"],
                               "not_correct": refused}
            print(f"{engine}: {summary['correct']}/{summary['scored']} correct, {summary['broken']} broken", flush=True)
            for r in refused:
                print(f"  {r['id']}: {r['status']}: {str(r['why'])[:300]}", flush=True)
    finally:
        if server is not None:
            server.stop()
    met = all(f["correct"] == f["questions"] for f in figures.values())
    verdict = {"bench": "oracle", "figures": figures, "warehouses": made, "met": met,
               "elapsed_s": round(time.perf_counter() - started, 1)}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(verdict, indent=1), encoding="utf-8")
    print(json.dumps(verdict))
    return 0 if met else 1


def _with_db(uri: str, name: str) -> str:
    from urllib.parse import urlsplit, urlunsplit

    return urlunsplit(urlsplit(uri)._replace(path=f"/{name}")).replace("%7Bdb%7D", "{db}")


if __name__ == "__main__":
    sys.exit(main())
