"""The oracle for a completion task: a scripted model that writes the gold model files
(`gold/<id>/solution/`), builds them with `dbt run --select` and finishes. Registered with
litellm, it goes through the same door and loop as a real model: a run that does not score
100% shows a fault in the plumbing (layout, gate, dbt, scoring), not in a model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dia_assets.platform.model.scripted import ScriptedModel, call, calls

PROVIDER = "dia_dbt_oracle"
MODEL = f"{PROVIDER}/gold"
ORACLE_NAMES = ("oracle", MODEL)


def solution_files(solution: Path) -> dict[str, str]:
    """Each gold file by its path in the project."""
    return {p.relative_to(solution).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(solution.rglob("*")) if p.is_file()}


def oracle_steps(files: dict[str, str]) -> list[Any]:
    """Write every gold file, run the models they define, finish."""
    models = [Path(path).stem for path in files if path.endswith(".sql")]
    return [
        calls(*(call("write_file", path=path, content=text) for path, text in files.items())),
        call("run_dbt", command="run --select " + " ".join(models)),
        call("finish", message=f"wrote {len(files)} gold file(s)"),
    ]


def oracle_model(solution: Path) -> ScriptedModel:
    return ScriptedModel(oracle_steps(solution_files(solution)), default="done", name=MODEL)
