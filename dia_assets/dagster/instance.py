"""The Dagster instance folder `dia ui` and `dia demo` use: a persistent one by default.

Without `DAGSTER_HOME`, Dagster throws its instance away (`dagster dev` a temporary folder, an
in-process run an ephemeral instance), so runs, materializations and sensor cursors vanish
between sessions. `make` sets `DAGSTER_HOME`; without make, the folder is `DIA_DAGSTER_HOME`,
else `<workspace>/.dagster`, written with the same `dagster.yaml` the Makefile writes (one
writer run at a time per workspace, run monitoring, no telemetry). The run queue is looked at
every second instead of Dagster's 5 (`dequeue_interval_seconds`): a run launched in the UI
waited up to 5 s in QUEUED for nothing (issue 31, bench/ui.py)."""

from __future__ import annotations

import os
from pathlib import Path

from dia_assets.platform.settings import get_settings
from dia_assets.platform.workspace import Workspace

# keep in step with the Makefile's $(DAGSTER_HOME)/dagster.yaml rule
DAGSTER_YAML = """telemetry:
  enabled: false
run_coordinator:
  module: dagster._core.run_coordinator
  class: QueuedRunCoordinator
  config:
    dequeue_interval_seconds: 1
concurrency:
  runs:
    tag_concurrency_limits:
      - key: "dia/workspace"
        value: "writer"
        limit: 1
run_launcher:
  module: dia_assets.dagster.launcher
  class: LocalRunLauncher
run_monitoring:
  enabled: true
  start_timeout_seconds: 180
  poll_interval_seconds: 30
"""


def dagster_home(workspace: str | Path) -> tuple[Path, str]:
    """The instance folder and where it came from (`DAGSTER_HOME`, `DIA_DAGSTER_HOME`, default)."""
    if os.environ.get("DAGSTER_HOME"):  # Dagster's own variable, set by make: used as it is
        return Path(os.environ["DAGSTER_HOME"]), "DAGSTER_HOME"
    if get_settings().dagster_home:
        return get_settings().dagster_home.expanduser().absolute(), "DIA_DAGSTER_HOME"
    return Workspace(workspace).dagster_home.absolute(), "default"


def use_persistent_instance(workspace: str | Path) -> Path:
    """Point DAGSTER_HOME (this process and its children) at the persistent folder, creating it
    with DIA's dagster.yaml when it has none; a folder named by DAGSTER_HOME is left as it is."""
    home, source = dagster_home(workspace)
    if source != "DAGSTER_HOME":
        home.mkdir(parents=True, exist_ok=True)
        config = home / "dagster.yaml"
        if not config.exists():
            config.write_text(DAGSTER_YAML, encoding="utf-8")
        os.environ["DAGSTER_HOME"] = str(home)
    return home
