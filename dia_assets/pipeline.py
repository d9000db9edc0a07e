"""One build from raw files to the validation report: the interpreter, then the schema creator.

Composition above the agents (layer "glue" in tools/layers.py): the schema creator plans, loads
and validates an interpretation and knows nothing of how it was made; this module interprets
inside the build's writer lock (the attempt records the `interpret` step), then hands over.
Used by `dia build`, the tests and the benchmarks; the Dagster assets run the two agents as
separate assets instead."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dia_assets.agents.locations import default_warehouse
from dia_assets.agents.schema_creator.build import (
    expert_files,
    load_and_validate,
    previous_interpretation,
    tracked,
    write_plan,
)
from dia_assets.agents.schema_creator.load import LoadResult, StepHook
from dia_assets.agents.schema_creator.writer import writing
from dia_assets.contracts.artifact import write_atomic
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.contracts.manifest import Manifest
from dia_assets.contracts.report import ValidationReport
from dia_assets.platform.files.object_store import local_copy
from dia_assets.platform.remote_workspace import synced
from dia_assets.platform.warehouse.base import build_dialect
from dia_assets.platform.workspace import Workspace


@dataclass
class BuildResult:
    manifest: Manifest
    load: LoadResult
    report: ValidationReport
    paths: dict[str, Path]


def run(data_dir: str | Path, workspace: str | Path, warehouse: str | None = None,
        interpretation: Interpretation | None = None, overrides_seed: str | Path | None = None,
        hook: StepHook | None = None, replace_anyway: bool = False, incremental: bool = False,
        command: str | None = None, wait_s: float = 0.0, say: Callable[[str], None] | None = None) -> BuildResult:
    """One build attempt from the files to the report, holding the workspace (writer.py): a
    second writer waits up to `wait_s` or fails naming this one. With `incremental`, unchanged
    files keep their profile (interpretation) and their tables (load); see incremental.py.
    Either folder may be an s3:// URL: the raw files are read from their local mirror, the
    workspace is a working copy pulled before and pushed after (remote_workspace.py)."""
    with synced(workspace) as ws:
        return _run(local_copy(data_dir), ws, warehouse, interpretation, overrides_seed, hook, replace_anyway,
                    incremental, command or f"build {data_dir}", wait_s, say)


def _run(data_dir: Path, workspace: Path, warehouse: str | None, interpretation: Interpretation | None,
         overrides_seed: str | Path | None, hook: StepHook | None, replace_anyway: bool, incremental: bool,
         command: str, wait_s: float, say: Callable[[str], None] | None) -> BuildResult:
    ws = Path(workspace).resolve()
    ws.mkdir(parents=True, exist_ok=True)
    target = warehouse or default_warehouse(ws)
    with writing(ws, command, "interpret", target, wait_s=wait_s, say=say) as attempt:
        assert attempt is not None
        steps = tracked(attempt, hook)
        steps("interpret")
        interp = interpretation
        if interp is None:
            from dia_assets.agents.interpreter import interpret

            interp = interpret(data_dir, previous=previous_interpretation(ws) if incremental else None,
                               decisions=expert_files(ws, overrides_seed))
            write_atomic(Workspace(ws).interpretation, interp.to_json())
        steps("plan")
        dialect = build_dialect(target).name
        manifest, paths = write_plan(interp, ws, dialect, overrides_seed)
        loaded, report = load_and_validate(manifest, target, ws, interp, hook, replace_anyway, incremental, attempt)
    paths["report"], paths["report_md"] = Workspace(ws).report, Workspace(ws).report_md
    return BuildResult(manifest=manifest, load=loaded, report=report, paths=paths)


def build(data_dir: str | Path, workspace: str | Path, warehouse: str | None = None,
          overrides_seed: str | Path | None = None, replace_anyway: bool = False,
          incremental: bool = False, command: str | None = None, wait_s: float = 0.0,
          say: Callable[[str], None] | None = None) -> ValidationReport:
    """Interpret, plan, load and validate; the entry point for `dia build`."""
    return run(data_dir, workspace, warehouse, overrides_seed=overrides_seed, replace_anyway=replace_anyway,
               incremental=incremental, command=command, wait_s=wait_s, say=say).report
