"""One SQLAlchemy engine per SQLite database file in the live replays' processes.

Dagster's SQLite instance storage calls `create_engine` for every query (run, event log and
schedule storage; NullPool): in a replay the sensor loop, the code server's sensor
evaluations, each run's event writes and the test's own polling spend a large part of their
CPU building engines (an engine plus a connection per tick write; measured here: 57 ms of CPU
per tick-like storage cycle, 33-40 ms with one engine per file). This keeps the engine of each
(URL, arguments) and hands it back: still NullPool, so still a fresh SQLite connection per
query, the same SQL, the same files and locks; only the engine object is reused. Applied by
the test daemon's sitecustomize (daemon, code server, run workers) and by the replay fixtures
in the test process (undone at teardown)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

# the modules of Dagster's SQLite storage that bind `create_engine` at import
MODULES = ("dagster._core.storage.runs.sqlite.sqlite_run_storage",
           "dagster._core.storage.event_log.sqlite.sqlite_event_log",
           "dagster._core.storage.schedules.sqlite.sqlite_schedule_storage")


def _cached(create: Callable[..., Any]) -> Callable[..., Any]:
    engines: dict[str, Any] = {}
    lock = threading.Lock()

    def create_engine(url: Any, **kwargs: Any) -> Any:
        key = repr((str(url), sorted((k, repr(v)) for k, v in kwargs.items())))
        with lock:
            engine = engines.get(key)
            if engine is None:
                engine = engines[key] = create(url, **kwargs)
        return engine

    create_engine.dia_original = create  # type: ignore[attr-defined]
    return create_engine


def reuse_sqlite_engines() -> Callable[[], None]:
    """Patch the storage modules; returns the undo. A module that no longer binds
    `create_engine` is left as it is (the replay still runs, slower)."""
    import importlib

    undo: list[tuple[Any, Any]] = []
    for name in MODULES:
        module = importlib.import_module(name)
        create = getattr(module, "create_engine", None)
        if create is None or hasattr(create, "dia_original"):
            continue
        module.create_engine = _cached(create)
        undo.append((module, create))

    def restore() -> None:
        for module, create in undo:
            module.create_engine = create
    return restore
