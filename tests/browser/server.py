"""A real `dagster dev` over a workspace built from the bundled example data, for browser tests.

The workspace is built the way `make demo` builds it (`dia demo` in a subprocess, into a
temporary workspace and DAGSTER_HOME), so the UI shows what a new user sees after
`make demo && make ui`. Starting, awaiting and stopping `dagster dev` is
`dia_assets.dagster.dev_session` (shared with bench/ui.py): its own session on a free loopback port,
always stopped as a whole with the embedded PostgreSQL.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dia_assets.dagster.dev_session import (
    ROOT,
    DevSession,
    dev_session,
    free_port,
    session_env,
    settled,
    wait_until_ready,
    wait_until_settled,
    write_instance_config,
)

__all__ = ["ROOT", "DagsterUI", "build_workspace", "dagster_dev", "free_port", "settled",
           "wait_until_ready", "wait_until_settled"]

DagsterUI = DevSession
START_TIMEOUT_S = float(os.environ.get("DIA_UI_START_TIMEOUT_S", "300"))
EXAMPLE_DATA = ROOT / "examples" / "data"


def _env(workspace: Path, home: Path, data_dir: Path = EXAMPLE_DATA) -> dict[str, str]:
    # sensors tick every few seconds, so the first-start automation settles quickly; no model:
    # the questions stay unanswered, as in `make demo`
    return session_env(workspace, home, data_dir, extra={"DIA_SENSOR_INTERVAL_S": "5"})


def build_workspace(base: Path, data_dir: Path = EXAMPLE_DATA, home: Path | None = None) -> tuple[Path, Path]:
    """`dia demo` into `base/ws` with instance `home` (default `base/home`): the path `make demo`
    takes. Another folder with the same `home` is a switch of folders in one instance."""
    workspace, home = base / "ws", home or base / "home"
    write_instance_config(home)
    cmd = [sys.executable, "-c", "from dia_assets.cli.app import app; app()", "demo",
           "--workspace", str(workspace), "--data-dir", str(data_dir)]
    log = base / "demo.log"
    with log.open("w") as out:
        done = subprocess.run(cmd, cwd=ROOT, env=_env(workspace, home, data_dir), stdout=out,
                              stderr=subprocess.STDOUT, timeout=START_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"`dia demo` failed ({done.returncode}):\n{log.read_text()[-4000:]}")
    return workspace, home


@contextmanager
def dagster_dev(base: Path, data_dir: Path = EXAMPLE_DATA, home: Path | None = None) -> Iterator[DagsterUI]:
    """Build a workspace of `data_dir` (the example) under `base`, serve it until the
    first-start automation has settled, and stop everything afterwards."""
    workspace, home = build_workspace(base, data_dir, home)
    with dev_session(workspace, home, base / "dagster-dev.log", env=_env(workspace, home, data_dir),
                     timeout_s=START_TIMEOUT_S) as ui:
        yield ui
