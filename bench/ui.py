"""Benchmark: the Dagster UI against the CLI on the example data (issue 31, Speed).

Two comparisons, each measured in the same run because the machines are shared and noisy:

* build: `build_job` launched through the GraphQL API the UI uses (`launchRun`, what *Materialize*
  on the job sends) on a running `dagster dev`, from the request to the run's success, against
  `dia build` on a copy of the same workspace (the same state, so the same incremental decisions).
  `--repeats` pairs (default 3), CLI and UI alternating so both meet the same moments of a shared
  machine. Target: the median ratio UI <= 1.5x CLI; every ratio and the worst are printed beside it.
* Materialize all of the question assets (`query_result` and `analysis_result`, every partition:
  the backfill the UI's dialog launches, `launchPartitionBackfill` with `allPartitions`) until the
  backfill ends, against `dia eval` on the same 15 questions (bench/data/example_gold.jsonl, the
  example's questions.yaml with gold SQL), both with the scripted `oracle` model (gold SQL through
  the full agent path, no network). Target: UI <= 2x `dia eval`.

The workspace is built by `dia demo` (as `make demo`), then `dagster dev` is started with
`dia_assets.dagster.dev_session` (as `make ui`, same instance config); a
`sitecustomize.py` on the PYTHONPATH of every process it starts registers the oracle's answers
with litellm when litellm is imported (so processes that never call a model do not import it), and
logs every model call. The build is served without a model, as after `make demo` (the CLI build
uses none; with a model the interpretation asks it to enrich the profile); the same instance is
then served again with the oracle as DIA_MODEL for Materialize all.

Where the time goes is printed per run from its event log: launch (request to RUN_ENQUEUED),
queue (to RUN_DEQUEUED), worker start (to RUN_START: process start and code-location load),
each step, and the end of the run.

Run:
    .venv/bin/python bench/ui.py [--keep] [--json-out F] [--skip-materialize]

The last line of output is one JSON object {"bench": "ui", "figures", "targets", "met"}.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

EXAMPLE = ROOT / "examples" / "data"
GOLD = ROOT / "bench" / "data" / "example_gold.jsonl"
TARGETS = {"build_ratio": 1.5, "materialize_all_ratio": 2}
QUESTION_ASSETS = ("query_result", "analysis_result")
ORACLE_MODEL = "dia_oracle/gold"
TERMINAL_RUN = {"SUCCESS", "FAILURE", "CANCELED"}
TERMINAL_BACKFILL = {"COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED", "FAILING"}

# Imported by every Python process `dagster dev` starts (PYTHONPATH): registers the oracle with
# litellm right after litellm is imported, with the gold answers the bench computed, and appends
# one line per model call to DIA_BENCH_CALLS.
SITECUSTOMIZE = '''
import os, sys
if os.environ.get("DIA_BENCH_ORACLE"):
    import importlib.abc, importlib.util, json

    def _register():
        from dia_assets.agents.evaluation import oracle
        oracle.ensure_registered()
        with open(os.environ["DIA_BENCH_ORACLE"], encoding="utf-8") as fh:
            for key, fields in json.load(fh).items():
                oracle.REGISTRY.put(key, oracle.OracleAnswer(**fields))
        step = oracle.next_step
        def logged(messages, tool_names):
            with open(os.environ["DIA_BENCH_CALLS"], "a", encoding="utf-8") as out:
                user = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
                out.write(json.dumps({"pid": os.getpid(), "tools": len(tool_names), "user": user[:80]}) + "\\n")
            return step(messages, tool_names)
        oracle.next_step = logged

    class _AfterLitellm(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name != "litellm":
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None:
                return spec
            execute = spec.loader.exec_module
            def exec_module(module):
                execute(module)
                _register()
            spec.loader.exec_module = exec_module
            return spec

    sys.meta_path.insert(0, _AfterLitellm())
'''

LAUNCH_RUN = """mutation($params: ExecutionParams!) { launchRun(executionParams: $params) {
  __typename ... on LaunchRunSuccess { run { runId } } ... on PythonError { message }
  ... on InvalidSubsetError { message } ... on RunConfigValidationInvalid { errors { message } } } }"""
LAUNCH_BACKFILL = """mutation($params: LaunchBackfillParams!) { launchPartitionBackfill(backfillParams: $params) {
  __typename ... on LaunchBackfillSuccess { backfillId } ... on PythonError { message }
  ... on PartitionSetNotFoundError { message } ... on InvalidStepError { invalidStepKey } } }"""
RUN_STATUS = "query($id: ID!) { runOrError(runId: $id) { ... on Run { status creationTime startTime endTime } } }"
RUN_EVENTS = """query($id: ID!) { logsForRun(runId: $id, limit: 5000) { ... on EventConnection {
  events { __typename ... on MessageEvent { timestamp eventType stepKey message } } } } }"""
BACKFILL_STATUS = """query($id: String!) { partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill {
  status timestamp endTimestamp runs(limit: 100) { runId status } } } }"""
REPOSITORY = """{ workspaceOrError { ... on Workspace { locationEntries { name locationOrLoadError {
  ... on RepositoryLocation { repositories { name } } } } } } }"""


# -- pure helpers (tests/test_bench_ui.py) ---------------------------------------------------------

def ratio(ui_s: float | None, cli_s: float | None) -> float | None:
    return round(ui_s / cli_s, 2) if ui_s is not None and cli_s else None


def met(figures: dict[str, Any], targets: dict[str, float] = TARGETS) -> bool:
    """Every targeted ratio measured and within its target."""
    return all(figures.get(name) is not None and figures[name] <= limit for name, limit in targets.items())


# GraphQL event types (`__typename`) to Dagster's event names, for events whose `eventType` is empty
TYPENAMES = {"RunEnqueuedEvent": "RUN_ENQUEUED", "RunDequeuedEvent": "RUN_DEQUEUED", "RunStartingEvent": "RUN_STARTING",
             "RunStartEvent": "RUN_START", "RunSuccessEvent": "RUN_SUCCESS", "RunFailureEvent": "RUN_FAILURE",
             "ExecutionStepStartEvent": "STEP_START", "ExecutionStepSuccessEvent": "STEP_SUCCESS",
             "ExecutionStepFailureEvent": "STEP_FAILURE"}
ALIASES = {"PIPELINE_ENQUEUED": "RUN_ENQUEUED", "PIPELINE_DEQUEUED": "RUN_DEQUEUED", "PIPELINE_STARTING": "RUN_STARTING",
           "PIPELINE_START": "RUN_START", "PIPELINE_SUCCESS": "RUN_SUCCESS", "PIPELINE_FAILURE": "RUN_FAILURE"}


def run_phases(events: Iterable[dict[str, Any]], requested_at: float) -> dict[str, Any]:
    """Where a run's time went, in seconds, from its event log (`logsForRun`) and the moment the
    launch was requested: launch (to RUN_ENQUEUED: the request, or the backfill daemon's loop),
    queue (to RUN_STARTING: the run queue's dequeue), worker start (to RUN_START: a process
    started and the code location loaded in it), each step in order, and the end of the run."""
    first: dict[str, float] = {}
    steps: dict[str, list[float]] = {}
    for e in events:
        kind = e.get("eventType") or TYPENAMES.get(e.get("__typename", ""))
        kind, ts = ALIASES.get(kind, kind), float(e.get("timestamp") or 0) / 1000
        if not kind or not ts:
            continue
        first.setdefault(kind, ts)
        if e.get("stepKey") and kind in ("STEP_START", "STEP_SUCCESS", "STEP_FAILURE"):
            steps.setdefault(e["stepKey"], []).append(ts)

    def span(a: float | None, b: float | None) -> float | None:
        return round(b - a, 2) if a is not None and b is not None else None

    end = first.get("RUN_SUCCESS") or first.get("RUN_FAILURE")
    enqueued, starting, start = first.get("RUN_ENQUEUED"), first.get("RUN_STARTING"), first.get("RUN_START")
    last_step = max((max(v) for v in steps.values()), default=None)
    return {
        "launch_s": span(requested_at, enqueued),
        "queue_s": span(enqueued, starting),
        "worker_start_s": span(starting or enqueued, start),
        "steps_s": {k: span(min(v), max(v)) for k, v in sorted(steps.items(), key=lambda kv: min(kv[1]))},
        "finish_s": span(last_step, end),
        "run_s": span(start, end),
        "total_s": span(requested_at, end),
    }


def gold_answers(gold: Path, warehouse: Path) -> dict[str, dict[str, Any]]:
    """The oracle's answers for every question of `gold` on `warehouse`, keyed as the oracle
    looks them up (the question text): what `dia eval --model oracle` registers per question."""
    from dataclasses import asdict

    from dia_assets.agents.evaluation.databases import open_database
    from dia_assets.agents.evaluation.datasets import load_instances
    from dia_assets.agents.evaluation.oracle import REGISTRY
    from dia_assets.agents.evaluation.solvers import AgentSolver

    solver, db, out = AgentSolver("oracle"), open_database(warehouse), {}
    try:
        for instance in load_instances(gold):
            _, key = solver._register_oracle(instance, db)  # noqa: SLF001 - the eval's own registration
            out[key] = asdict(REGISTRY.answers[key])
            REGISTRY.drop(key)
    finally:
        close = getattr(db, "close", None)
        if close:
            close()
    return out


# -- the measurement -------------------------------------------------------------------------------

def _dia(args: list[str], env: dict[str, str], log: Path) -> tuple[float, int]:
    started = time.perf_counter()
    with log.open("w") as out:
        done = subprocess.run([sys.executable, "-c", "from dia_assets.cli.app import app; app()", *args], cwd=ROOT,
                              env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    return round(time.perf_counter() - started, 2), done.returncode


def _wait(probe: Callable[[], Any], done: Callable[[Any], bool], timeout_s: float, what: str, session: Any) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        session.check_alive()
        value = probe()
        if done(value):
            return value
        time.sleep(0.25)
    raise RuntimeError(f"{what} not done within {timeout_s:.0f} s:\n{session.log_tail()}")


def _selector(session: Any) -> tuple[str, str]:
    entries = session.graphql(REPOSITORY)["workspaceOrError"]["locationEntries"]
    location = entries[0]
    return location["name"], location["locationOrLoadError"]["repositories"][0]["name"]


def launch_build(session: Any, timeout_s: float) -> dict[str, Any]:
    """`build_job` as the UI launches it; seconds from the request to the run's success."""
    location, repository = _selector(session)
    params = {"selector": {"repositoryLocationName": location, "repositoryName": repository, "jobName": "build_job"},
              "mode": "default", "runConfigData": {}, "executionMetadata": {"tags": []}}
    requested = time.time()
    out = session.graphql(LAUNCH_RUN, {"params": params})["launchRun"]
    if out["__typename"] != "LaunchRunSuccess":
        raise RuntimeError(f"launchRun: {out}")
    run_id = out["run"]["runId"]
    status = _wait(lambda: session.graphql(RUN_STATUS, {"id": run_id})["runOrError"],
                   lambda r: r.get("status") in TERMINAL_RUN, timeout_s, f"build_job run {run_id}", session)
    seen = round(time.time() - requested, 2)
    events = session.graphql(RUN_EVENTS, {"id": run_id}, timeout_s=60)["logsForRun"]["events"]
    return {"run_id": run_id, "status": status["status"], "seen_s": seen,
            "end_s": round(status["endTime"] - requested, 2) if status.get("endTime") else None,
            "phases": run_phases(events, requested)}


def materialize_all(session: Any, timeout_s: float) -> dict[str, Any]:
    """Every partition of the question assets in one backfill, as *Materialize all* launches it;
    seconds from the request to the backfill's end, and each of its runs' phases."""
    params = {"assetSelection": [{"path": [k]} for k in QUESTION_ASSETS], "allPartitions": True,
              "tags": [], "title": "bench/ui.py materialize all"}
    requested = time.time()
    out = session.graphql(LAUNCH_BACKFILL, {"params": params})["launchPartitionBackfill"]
    if out["__typename"] != "LaunchBackfillSuccess":
        raise RuntimeError(f"launchPartitionBackfill: {out}")
    backfill_id = out["backfillId"]

    def probe() -> dict[str, Any]:
        return session.graphql(BACKFILL_STATUS, {"id": backfill_id})["partitionBackfillOrError"]

    def finished(b: dict[str, Any]) -> bool:
        return b.get("status") in TERMINAL_BACKFILL and all(r["status"] in TERMINAL_RUN for r in b.get("runs") or [])

    backfill = _wait(probe, finished, timeout_s, f"backfill {backfill_id}", session)
    seen = round(time.time() - requested, 2)
    runs = []
    for r in backfill.get("runs") or []:
        events = session.graphql(RUN_EVENTS, {"id": r["runId"]}, timeout_s=60)["logsForRun"]["events"]
        mats = sum(1 for e in events if e.get("eventType") == "ASSET_MATERIALIZATION")
        runs.append({"run_id": r["runId"], "status": r["status"], "materializations": mats,
                     "phases": run_phases(events, requested)})
    return {"backfill_id": backfill_id, "status": backfill["status"], "seen_s": seen,
            "end_s": round(backfill["endTimestamp"] - requested, 2) if backfill.get("endTimestamp") else None,
            "runs": runs}


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def main() -> int:  # noqa: PLR0915 - one measurement, in order
    from dia_assets.dagster.dev_session import dev_session, session_env, write_instance_config

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (logs, workspaces)")
    ap.add_argument("--json-out")
    ap.add_argument("--skip-materialize", action="store_true")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--repeats", type=int, default=3, help="UI and CLI builds, alternating")
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="dia_bench_ui_"))
    figures: dict[str, Any] = {"load_before": _uptime()}
    detail: dict[str, Any] = {}
    ws, home, hooks = base / "ws", base / "home", base / "hooks"
    write_instance_config(home)
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    plain = session_env(ws, home, EXAMPLE)
    try:
        # the workspace a person has after `make demo` (no model: the questions stay unanswered)
        figures["demo_s"], rc = _dia(["demo", "--workspace", str(ws), "--data-dir", str(EXAMPLE)], plain, base / "demo.log")
        if rc != 0:
            raise RuntimeError(f"dia demo failed ({rc}): {(base / 'demo.log').read_text()[-3000:]}")
        # the CLI on a copy of the same workspace: same state, same incremental decisions; the
        # pristine copy is what every later CLI build starts from
        pristine = base / "pristine_ws"
        shutil.copytree(ws, pristine, ignore=shutil.ignore_patterns("pgdata", ".dagster", "*.lock"))
        cli_ws = base / "cli_ws"

        def cli_build(n: int) -> float:
            shutil.rmtree(cli_ws, ignore_errors=True)
            shutil.copytree(pristine, cli_ws)
            took, rc = _dia(["build", str(EXAMPLE), "-w", str(cli_ws)],
                            session_env(cli_ws, base / "cli_home", EXAMPLE), base / f"cli_build_{n}.log")
            detail.setdefault("cli_build_exits", []).append(rc)
            return took

        cli_builds = [cli_build(0)]
        answers = base / "oracle_answers.json"
        from dia_assets.platform.workspace import Workspace

        answers.write_text(json.dumps(gold_answers(GOLD, Workspace(cli_ws).warehouse)), encoding="utf-8")
        figures["eval_s"], rc = _dia(["eval", str(GOLD), "--db", str(Workspace(cli_ws).warehouse), "--model", "oracle",
                                      "--output", str(base / "eval")], plain, base / "eval.log")
        detail["eval_exit"] = rc
        summary = base / "eval" / "summary.json"
        if summary.exists():
            detail["eval_summary"] = {k: v for k, v in json.loads(summary.read_text()).items()
                                      if k in ("ex", "n", "correct", "execution_accuracy")}
        calls = base / "model_calls.jsonl"
        hooked = session_env(ws, home, EXAMPLE, pythonpath=(str(hooks),), extra={"DIA_BENCH_CALLS": str(calls)})
        # the build as `make ui` serves it after `make demo`: no model (the CLI build uses none)
        started = time.perf_counter()
        with dev_session(ws, home, base / "dagster-dev.log", env=hooked, timeout_s=args.timeout) as session:
            figures["ui_start_s"] = round(time.perf_counter() - started, 2)
            # builds alternate CLI and UI, so both see the same moments of a shared machine; the
            # headline is the median ratio, the worst one beside it
            ui_builds: list[float | None] = []
            for n in range(args.repeats):
                if n:
                    cli_builds.append(cli_build(n))
                build = launch_build(session, args.timeout)
                detail.setdefault("ui_builds", []).append(build)
                ui_builds.append(build["end_s"] if build["status"] == "SUCCESS" else None)
            figures["cli_build_s"], figures["ui_build_s"] = cli_builds, ui_builds
            ratios = [ratio(u, c) for u, c in zip(ui_builds, cli_builds, strict=True)]
            figures["build_ratios"] = ratios
            figures["build_ratio"] = None if None in ratios else statistics.median(ratios)
            figures["build_ratio_worst"] = None if None in ratios else max(ratios)
            figures["ui_build_phases"] = {k: v for k, v in build["phases"].items() if k != "total_s"}
        if not args.skip_materialize:
            # the same instance and workspace served again, now with the oracle as the model
            env = {**hooked, "DIA_MODEL": ORACLE_MODEL, "DIA_BENCH_ORACLE": str(answers)}
            with dev_session(ws, home, base / "dagster-dev-model.log", env=env, timeout_s=args.timeout) as session:
                mat = materialize_all(session, args.timeout)
            detail["materialize_all"] = mat
            figures["materialize_all_s"] = mat["end_s"] or mat["seen_s"]
            figures["materialize_all_runs"] = len(mat["runs"])
            figures["materializations"] = sum(r["materializations"] for r in mat["runs"])
            figures["materialize_all_status"] = mat["status"]
            figures["materialize_all_ratio"] = ratio(figures["materialize_all_s"], figures["eval_s"])
            figures["materialize_all_phases"] = [{k: v for k, v in r["phases"].items() if k != "total_s"}
                                                 for r in mat["runs"]]
        figures["model_calls"] = len(calls.read_text().splitlines()) if calls.exists() else 0
    finally:
        figures["load_after"] = _uptime()
        if args.keep:
            print(f"kept {base}", file=sys.stderr)
        else:
            shutil.rmtree(base, ignore_errors=True)
    print(json.dumps(detail, indent=1))
    line = {"bench": "ui", "figures": figures, "targets": TARGETS, "met": met(figures)}
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({**line, "detail": detail}, indent=1), encoding="utf-8")
    print(json.dumps(line))
    return 0 if line["met"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
