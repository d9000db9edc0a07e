"""Imported by every Python process `dia ui` and `dia_assets.dagster.dev_session` start under `dagster dev`
(this folder comes first on their PYTHONPATH; Python imports the first `sitecustomize` it finds).

Two of Dagster's fixed costs have no setting, and a run launched in the UI paid both (issue 31,
bench/ui.py):

- the code server starts each run worker with "spawn": a fresh interpreter that imports Python's
  and Dagster's modules, DuckDB, sqlglot, pydantic... before the run begins (10-35 s per run on a
  busy 2-core machine). Here the code server starts them from a forkserver, started at once in
  the background, that imported those modules once (WARM). Each run is still its own process and
  still loads the code location (dia_assets.definitions) afresh, so a code change is seen. With
  a model configured the forkserver also loads what a question run needs before its first
  answer (litellm, the agents, the tokenizer, the lexicon: dia_assets/dagster/warm_run_workers.py),
  which each question run of a *Materialize all* paid on its own before;
- the daemon's backfill loop sleeps 30 s between iterations (`DEFAULT_DAEMON_INTERVAL_SECONDS`,
  read by the loop at each start): a *Materialize all* started up to 30 s after the click, and
  its end was recorded up to 30 s late. Here it is 2 s (the run queue is already looked at every
  second: dequeue_interval_seconds in the instance's dagster.yaml).

Another `sitecustomize` further on the path (a user's own) is imported afterwards, as if this one
were not there."""

from __future__ import annotations

import sys

BACKFILL_LOOP_S = 2
# Dagster with its instance storage, third-party packages and the framework-free agents: nothing
# that reads the workspace at import, so a run still sees the current manifest and questions
WARM = ("dagster", "dagster._grpc.impl", "dagster._core.execution.api", "dagster._core.instance.factory",
        "dagster._core.storage.sqlite_storage", "dagster._core.storage.runs.sqlite",
        "dagster._core.storage.event_log.sqlite", "dagster._core.storage.schedules.sqlite",
        "dagster._core.storage.local_compute_log_manager", "dagster._core.secrets.env_file",
        "dagster_duckdb", "sqlalchemy", "duckdb", "pyarrow", "sqlglot", "psycopg", "psutil", "numpy", "yaml",
        "pydantic", "dia_assets.agents.interpreter.interpreter", "dia_assets.agents.schema_creator.build",
        "dia_assets.agents.query.loop",
        # with a model configured, what a question run loaded before its first answer (litellm,
        # the agents, tokenizer, lexicon): dia_assets/dagster/warm_run_workers.py; nothing without one
        "dia_assets.dagster.warm_run_workers")


def _command() -> list[str]:
    return list(getattr(sys, "orig_argv", sys.argv))


def _is_module(argv: list[str], module: str, *args: str) -> bool:
    for i, arg in enumerate(argv[:-1]):
        if arg == "-m":
            return argv[i + 1] == module and argv[i + 2:i + 2 + len(args)] == list(args)
    return False


def warm_run_workers() -> None:
    """Run workers of this code server start from a pre-started forkserver that imported WARM."""
    import multiprocessing
    import threading

    from dagster._grpc import server

    init = server.DagsterApiServer.__init__

    def warmed(self, *args, **kwargs) -> None:  # noqa: ANN001, ANN002, ANN003
        init(self, *args, **kwargs)
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(list(WARM))
        self._mp_ctx = ctx
        from multiprocessing import forkserver

        threading.Thread(target=forkserver.ensure_running, name="dia-warm-forkserver", daemon=True).start()

    server.DagsterApiServer.__init__ = warmed


def short_backfill_loop() -> None:
    from dagster._daemon import controller

    controller.DEFAULT_DAEMON_INTERVAL_SECONDS = BACKFILL_LOOP_S


def _next_sitecustomize() -> None:
    """The `sitecustomize` Python would have imported without this folder, if there is one."""
    import importlib.machinery
    import importlib.util
    from pathlib import Path

    here = str(Path(__file__).resolve().parent)
    rest = [p for p in sys.path if p and str(Path(p).resolve()) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is not None and spec.loader is not None and spec.origin != __file__:
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)


def _apply() -> None:
    argv = _command()
    try:
        if _is_module(argv, "dagster", "api", "grpc"):
            warm_run_workers()
        elif _is_module(argv, "dagster._daemon", "run"):
            short_backfill_loop()
    except Exception as err:  # a Dagster that moved these: run as Dagster does, and say so
        print(f"dia_assets/boot/sitecustomize.py: not applied ({type(err).__name__}: {err})", file=sys.stderr)
    _next_sitecustomize()


_apply()
