"""dia_assets/boot/sitecustomize.py, first on the PYTHONPATH of `dagster dev` (dia ui, dev_session):
which process gets which change, that the changes reach Dagster, and that a user's own
sitecustomize further on the path still runs. (bench/ui.py measures the effect.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from dia_assets.dagster.dev_session import session_env
from dia_assets.dagster.devserver import BOOT, boot_env

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import sitecustomize as s
assert s.__file__.startswith({boot!r}), s.__file__
assert s._is_module(["python", "-m", "dagster", "api", "grpc", "--port", "1"], "dagster", "api", "grpc")
assert s._is_module(["python", "-m", "dagster._daemon", "run", "--log-level", "info"], "dagster._daemon", "run")
assert not s._is_module(["python", "-m", "dagster._daemon", "run"], "dagster", "api", "grpc")
assert not s._is_module(["python", "-c", "pass"], "dagster._daemon", "run")
from dagster._daemon import controller
from dagster._grpc import server
before = (controller.DEFAULT_DAEMON_INTERVAL_SECONDS, server.DagsterApiServer.__init__)
s.short_backfill_loop(); s.warm_run_workers()
print(before[0], controller.DEFAULT_DAEMON_INTERVAL_SECONDS, server.DagsterApiServer.__init__ is not before[1])
import users_hook_ran
"""


def test_boot_folder_reaches_dagster_and_chains_a_users_sitecustomize(tmp_path: Path) -> None:
    user = tmp_path / "user"
    user.mkdir()
    (user / "sitecustomize.py").write_text("import sys, types\nsys.modules['users_hook_ran'] = types.ModuleType('x')\n")
    env = boot_env({**os.environ, "PYTHONPATH": os.pathsep.join([str(user), str(ROOT)])})
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(BOOT)
    out = subprocess.run([sys.executable, "-c", PROBE.format(boot=str(BOOT))], env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.split() == ["30", "2", "True"]


def test_dev_sessions_put_the_boot_folder_first(tmp_path: Path) -> None:
    env = session_env(tmp_path / "ws", tmp_path / "home", pythonpath=("/hooks",))
    assert env["PYTHONPATH"].split(os.pathsep)[:3] == [str(BOOT), "/hooks", str(ROOT)]


FORKED = """
import multiprocessing as mp
import sitecustomize as s
import probe_child

ctx = mp.get_context("forkserver")
ctx.set_forkserver_preload([m for m in s.WARM if m == "dia_assets.dagster.warm_run_workers"])
with ctx.Pool(1) as pool:
    print(pool.apply(probe_child.seen))
"""
CHILD = """
import sys

def seen():
    # what the forked worker has before it imports anything itself
    have = ["preloaded" if "dia_assets.dagster.warm_run_workers" in sys.modules else "-",
            "litellm" if "litellm" in sys.modules else "-", "scipy.stats" if "scipy.stats" in sys.modules else "-"]
    warmed = sys.modules["dia_assets.dagster.warm_run_workers"].WARMED if have[0] != "-" else []
    return " ".join([*have, *[s.replace(" ", "_") for s in warmed]])
"""


def test_run_workers_fork_with_the_model_library_loaded_only_when_a_model_is_set(tmp_path: Path) -> None:
    """Under `dia ui` the run workers' forkserver imports dia_assets.dagster.warm_run_workers: with a
    model configured a question run starts with litellm, the agents, the tokenizer and the
    lexicon loaded (it spent most of its time before the first answer loading them, each run
    again); without one nothing is loaded (a build never needs them)."""
    (tmp_path / "probe_child.py").write_text(CHILD)
    base = boot_env({**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])})
    base.pop("DIA_MODEL", None)
    outs = {}
    for name, extra in {"model": {"DIA_MODEL": "dia_oracle/gold"}, "none": {}}.items():
        out = subprocess.run([sys.executable, "-c", FORKED], env={**base, **extra}, capture_output=True,
                             text=True, timeout=600, check=False, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-3000:]
        outs[name] = out.stdout.split()
    assert outs["model"] == ["preloaded", "litellm", "scipy.stats", "model_library", "answering", "catalog_words"]
    assert outs["none"] == ["preloaded", "-", "-"]
