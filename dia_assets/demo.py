"""`make demo`: materialize the whole asset graph in process and summarise the artifacts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dagster import DagsterInstance

from dia_assets.agents.interpreter.render import summary
from dia_assets.contracts.interpretation import Interpretation


def run_demo(data_dir: Path, workspace: Path, say: Callable[[str], None]) -> int:
    from dia_assets.definitions import defs

    say(f"materializing every asset on {data_dir} into {workspace}/ ...")
    instance = DagsterInstance.get() if _has_home() else DagsterInstance.ephemeral()
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(instance=instance, raise_on_error=False)
    if not result.success:
        say("demo failed: see the Dagster log above")
        return 1
    interp = Interpretation.read(workspace / "interpretation.json")
    print("\n== Data Interpreter ==")
    print(summary(interp))
    print("\nartifacts:")
    for path in sorted(p for p in workspace.rglob("*") if p.is_file() and "pgdata" not in p.parts):
        print(f"  {path}")
    return 0


def _has_home() -> bool:
    import os

    return bool(os.environ.get("DAGSTER_HOME"))
