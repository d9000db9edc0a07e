"""`make demo`: run the whole pipeline in process, the way the UI would, and summarise it."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from dagster import DagsterInstance

from dia_assets.agents.interpreter.render import summary
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.platform.workspace import Workspace

Say = Callable[[str], None]
# Step-by-step events stay in the Dagster instance (`make ui`); the terminal gets warnings.
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def _instance(workspace: Path) -> DagsterInstance:
    """The persistent instance (DAGSTER_HOME, else DIA_DAGSTER_HOME or <workspace>/.dagster), so
    `dia ui` afterwards shows the demo's runs."""
    from dia_assets.dagster.instance import use_persistent_instance

    use_persistent_instance(workspace)
    return DagsterInstance.get()


def _run_job(defs, name: str, instance: DagsterInstance, say: Say, **kwargs) -> bool:  # noqa: ANN001, ANN003
    say(f"-- running {name}")
    result = defs.resolve_job_def(name).execute_in_process(
        instance=instance, raise_on_error=False, run_config=QUIET, **kwargs)
    if not result.success:
        say(f"{name} failed: see the Dagster log above")
    return result.success


def run_demo(data_dir: Path, workspace: Path, say: Say) -> int:
    """The demo is one writer of the workspace for its whole run (writer_lock): a `dia build`
    started meanwhile fails naming it, and the demo's own steps take the lock again."""
    from dia_assets.agents.schema_creator.writer_lock import WorkspaceBusy, writer_lock

    try:
        with writer_lock(workspace, "dia demo"):
            return _demo(data_dir, workspace, say)
    except WorkspaceBusy as busy:
        say(f"dia demo: not started: {busy}")
        return 1


def _demo(data_dir: Path, workspace: Path, say: Say) -> int:
    from dia_assets.dagster.interpretation import record_raw_files
    from dia_assets.definitions import build_defs

    instance = _instance(workspace)
    seed_overrides(data_dir, workspace, say)
    say(f"recorded {record_raw_files(instance, data_dir)} raw files (data version = content hash)")
    defs = build_defs(workspace)
    files = Workspace(workspace)
    if not files.manifest.exists():
        # The tables are assets read from the manifest (as `make ui` will load them): plan
        # first, so build_job materializes warehouse/<table> rather than a single `warehouse`.
        say("planning the schema first: the warehouse tables become assets")
        _run_job(defs, "plan_job", instance, say)
        defs = build_defs(workspace)
    say(f"materializing the pipeline on {data_dir} into {workspace}/ ...")
    ok = _run_job(defs, "build_job", instance, say)
    # the catalog follows a build in a run of its own (its automation condition, under `make ui`)
    ok = _run_job(defs, "catalog_job", instance, say) and ok
    if files.interpretation.exists():
        print("\n== Data Interpreter ==")
        print(summary(Interpretation.read(files.interpretation)))
    if files.report_md.exists():
        print("\n== Schema Creator ==")
        print(_report_summary(workspace))
    for extra in _extra_steps():
        ok = extra(defs, instance, workspace, say) and ok
    print("\nartifacts:")
    for path in sorted(p for p in workspace.rglob("*") if p.is_file() and "pgdata" not in p.parts):
        print(f"  {path}")
    return 0 if ok else 1


def seed_overrides(data_dir: Path, workspace: Path, say: Say) -> None:
    """A new workspace starts from the expert corrections the data folder carries
    (`<data dir>/overrides.yaml`), never from another folder's: without them the Schema
    Creator writes the template."""
    from dia_assets.agents.data_folder import overrides_seed

    target = Workspace(workspace).overrides
    seed = overrides_seed(data_dir)
    if not target.exists() and seed is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(seed.read_text(encoding="utf-8"), encoding="utf-8")
        say(f"seeded {target} from {seed}")


def _report_summary(workspace: Path) -> str:
    from dia_assets.agents.schema_creator.build import summary
    from dia_assets.contracts.report import ValidationReport

    return summary(ValidationReport.read(Workspace(workspace).report))


def _memory_step(defs, instance: DagsterInstance, workspace: Path, say: Say) -> bool:  # noqa: ANN001
    ok = _run_job(defs, "memory_job", instance, say)
    lessons = Workspace(workspace).lessons
    if ok and lessons.exists():
        print(f"\n== Shared memory ==\nlessons for review: {lessons}")
    return ok


def _extra_steps() -> list[Callable[..., bool]]:
    """Stages after the warehouse: answering questions, then memory maintenance."""
    from dia_assets.dagster.query import demo_questions_step

    return [demo_questions_step, _memory_step]
