"""bench/ui.py's own logic, with a tiny fake of the GraphQL API: where a run's time went (from
its event log), launching build_job and a backfill and waiting for them, the verdict, and the
sitecustomize that gives run workers the oracle's answers."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def ui() -> Any:
    spec = importlib.util.spec_from_file_location("bench_ui", ROOT / "bench" / "ui.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _event(kind: str, t: float, step: str | None = None, typename: str = "MessageEvent") -> dict[str, Any]:
    return {"__typename": typename, "eventType": kind, "timestamp": str(int(t * 1000)), "stepKey": step}


RUN_EVENTS = [
    _event("RUN_ENQUEUED", 100.5),
    _event(None, 101.0, typename="RunStartingEvent"),  # eventType empty: the type name says it
    _event("RUN_START", 104.0),
    _event("STEP_START", 104.5, "interpretation"), _event("STEP_SUCCESS", 107.0, "interpretation"),
    _event("ASSET_MATERIALIZATION", 106.9, "interpretation"),
    _event("STEP_START", 107.1, "warehouse"), _event("STEP_SUCCESS", 109.1, "warehouse"),
    _event("PIPELINE_SUCCESS", 109.5),  # the old name of RUN_SUCCESS
]


def test_run_phases_split_a_run_into_launch_queue_worker_start_steps_and_finish(ui: Any) -> None:
    phases = ui.run_phases(RUN_EVENTS, requested_at=100.0)
    assert phases == {"launch_s": 0.5, "queue_s": 0.5, "worker_start_s": 3.0,
                      "steps_s": {"interpretation": 2.5, "warehouse": 2.0}, "finish_s": 0.4,
                      "run_s": 5.5, "total_s": 9.5}
    assert list(phases["steps_s"]) == ["interpretation", "warehouse"]  # in the order they ran


def test_verdict_needs_every_ratio_measured_and_within_target(ui: Any) -> None:
    assert ui.ratio(30.0, 20.0) == 1.5 and ui.ratio(None, 20.0) is None and ui.ratio(3.0, 0) is None
    assert ui.met({"build_ratio": 1.5, "materialize_all_ratio": 1.9})
    assert not ui.met({"build_ratio": 1.51, "materialize_all_ratio": 1.0})
    assert not ui.met({"build_ratio": 1.0})  # Materialize all not measured: not met


class FakeSession:
    """Answers the bench's GraphQL requests from a script; records the mutations it was sent."""

    def __init__(self, statuses: list[str], backfill: list[str]) -> None:
        self.statuses, self.backfill, self.sent = list(statuses), list(backfill), []

    def check_alive(self) -> None:
        pass

    def log_tail(self) -> str:
        return ""

    def graphql(self, query: str, variables: dict | None = None, timeout_s: float = 30) -> dict:  # noqa: ARG002
        variables = variables or {}
        if "launchRun" in query:
            self.sent.append(("launchRun", variables["params"]))
            return {"launchRun": {"__typename": "LaunchRunSuccess", "run": {"runId": "r1"}}}
        if "launchPartitionBackfill" in query:
            self.sent.append(("launchPartitionBackfill", variables["params"]))
            return {"launchPartitionBackfill": {"__typename": "LaunchBackfillSuccess", "backfillId": "b1"}}
        if "workspaceOrError" in query:
            return {"workspaceOrError": {"locationEntries": [
                {"name": "dia", "locationOrLoadError": {"repositories": [{"name": "__repository__"}]}}]}}
        if "runOrError" in query:
            status = self.statuses.pop(0) if len(self.statuses) > 1 else self.statuses[0]
            return {"runOrError": {"status": status, "creationTime": 1.0, "startTime": None,
                                   "endTime": 1e10 if status == "SUCCESS" else None}}
        if "partitionBackfillOrError" in query:
            status = self.backfill.pop(0) if len(self.backfill) > 1 else self.backfill[0]
            runs = [{"runId": "q", "status": "SUCCESS" if status.startswith("COMPLETED") else "STARTED"}]
            return {"partitionBackfillOrError": {"status": status, "timestamp": 1.0, "endTimestamp": None, "runs": runs}}
        if "logsForRun" in query:
            return {"logsForRun": {"events": RUN_EVENTS}}
        raise AssertionError(f"unexpected query {query[:60]}")


def test_launch_build_sends_build_job_as_the_ui_does_and_waits_for_the_end(ui: Any) -> None:
    session = FakeSession(["QUEUED", "STARTED", "SUCCESS"], ["REQUESTED"])
    out = ui.launch_build(session, timeout_s=30)
    (name, params), = session.sent
    assert name == "launchRun"
    assert params["selector"] == {"repositoryLocationName": "dia", "repositoryName": "__repository__",
                                  "jobName": "build_job"}
    assert out["status"] == "SUCCESS" and out["run_id"] == "r1" and session.statuses == ["SUCCESS"]
    assert out["phases"]["steps_s"] == {"interpretation": 2.5, "warehouse": 2.0}


def test_materialize_all_backfills_every_partition_of_both_question_assets(ui: Any) -> None:
    session = FakeSession(["SUCCESS"], ["REQUESTED", "REQUESTED", "COMPLETED_SUCCESS"])
    out = ui.materialize_all(session, timeout_s=30)
    (name, params), = session.sent
    assert name == "launchPartitionBackfill" and params["allPartitions"] is True
    assert params["assetSelection"] == [{"path": ["query_result"]}, {"path": ["analysis_result"]}]
    assert out["status"] == "COMPLETED_SUCCESS" and session.backfill == ["COMPLETED_SUCCESS"]
    assert out["runs"] == [{"run_id": "q", "status": "SUCCESS", "materializations": 1,
                            "phases": ui.run_phases(RUN_EVENTS, 0) | {"launch_s": out["runs"][0]["phases"]["launch_s"],
                                                                     "total_s": out["runs"][0]["phases"]["total_s"]}}]


def test_sitecustomize_registers_the_oracles_answers_when_litellm_is_imported(ui: Any, tmp_path: Path) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(ui.SITECUSTOMIZE)
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"How many wards?": {"sql": "SELECT COUNT(*) AS n FROM wards", "columns": ["n"]}}))
    calls = tmp_path / "calls.jsonl"
    probe = ("import sys; from dia_assets.agents.evaluation import oracle as o; "
             "before = o.REGISTRY.find('How many wards?'); import litellm; "
             "step = o.next_step([{'role': 'user', 'content': 'Question: How many wards?'}], ['declare_contract', 'submit']); "
             "print(before is None, step['name'], o.ensure_registered())")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(hooks), str(ROOT)]), "DIA_BENCH_ORACLE": str(answers),
           "DIA_BENCH_CALLS": str(calls), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "declare_contract", ui.ORACLE_MODEL]
    assert json.loads(calls.read_text())["user"].startswith("Question: How many wards?")
