"""dbt project completion (issue 34): Spider2-DBT's task layout, a scratch copy behind a gate,
a plain tool loop over the model door, and the benchmark's `duckdb_match` scoring.

Modules, one concept each: `tasks` (the layout), `scoring` (duckdb_match), `scratch` (the gate:
files, dbt allow-list, read-only queries), `loop` (the agent), `oracle` (the gold models through
the loop), `runner` (instances in turn, results), `generate` (small instances from a DIA build
and its `dia dbt export`). Framework-free; the CLI is `dia eval --tasks spider2-dbt` and
`dia dbt tasks`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from dia_assets.platform.lazy import lazy_exports

if TYPE_CHECKING:
    from dia_assets.agents.dbt_completion.generate import generate_tasks
    from dia_assets.agents.dbt_completion.runner import run_tasks
    from dia_assets.agents.dbt_completion.tasks import load_tasks, tasks_file, write_task_files

_EXPORTS = {
    "generate_tasks": "dia_assets.agents.dbt_completion.generate",
    "load_tasks": "dia_assets.agents.dbt_completion.tasks",
    "run_tasks": "dia_assets.agents.dbt_completion.runner",
    "tasks_file": "dia_assets.agents.dbt_completion.tasks",
    "write_task_files": "dia_assets.agents.dbt_completion.tasks",
}

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

__all__ = ["generate_tasks", "load_tasks", "run_tasks", "tasks_file", "write_task_files"]
