"""Probe verification: a lesson is usable only after its precondition holds on the current data.

Convention: a probe *confirms* when it executes and returns at least one row whose first
value is truthy (`SELECT count(*) > 1 FROM ...`, `SELECT 1 FROM ... LIMIT 1`). No rows, a
falsy first value (false, 0, NULL, '') or an error refute it. Probes run read-only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from dia_assets.agents.memory.models import MemoryItem, Tier, VerificationResult

ProbeRunner = Callable[[str], Sequence[Sequence[Any]]]


@runtime_checkable
class SupportsProbe(Protocol):
    """An object the Query Generator may pass instead of a callable."""

    def probe(self, sql: str) -> Sequence[Sequence[Any]]: ...


def as_runner(runner: ProbeRunner | SupportsProbe) -> ProbeRunner:
    if isinstance(runner, SupportsProbe):
        return runner.probe
    return runner


def probe_confirms(rows: Sequence[Sequence[Any]]) -> bool:
    """The documented convention: first value of the first row is truthy."""
    return bool(rows) and len(rows[0]) > 0 and bool(rows[0][0])


def check(item: MemoryItem, runner: ProbeRunner, scope: str | None) -> VerificationResult:
    """Run one item's probe. Examples carry no probe: they are idioms the agent re-derives."""
    if not item.probe_sql:
        usable = item.tier == Tier.EXAMPLE
        detail = "example: confirm names at use" if usable else "lesson without a probe"
        return VerificationResult(
            item_id=item.id, outcome="no_probe", usable=usable, scope=scope, detail=detail
        )
    try:
        rows = runner(item.probe_sql)
    except Exception as err:  # any failure to execute refutes: never serve on doubt
        return VerificationResult(
            item_id=item.id,
            outcome="error",
            usable=False,
            scope=scope,
            detail=f"{type(err).__name__}: {err}"[:500],
        )
    confirmed = probe_confirms(rows)
    first = repr(rows[0][0]) if rows and len(rows[0]) else "no rows"
    return VerificationResult(
        item_id=item.id,
        outcome="confirmed" if confirmed else "refuted",
        usable=confirmed,
        scope=scope,
        detail=f"first value {first}"[:500],
    )


class DuckDBProbeRunner:
    """Read-only DuckDB probes: external access off, configuration locked, time-limited."""

    def __init__(
        self,
        path: str | Path | None = None,
        connection: Any = None,
        timeout_s: float = 10.0,
        max_rows: int = 1,
    ) -> None:
        import duckdb

        if connection is None:
            if path is None:
                raise ValueError("give a DuckDB file path or an open connection")
            connection = duckdb.connect(str(path), read_only=True)
            connection.execute("SET enable_external_access = false")
            connection.execute("SET lock_configuration = true")
            self._owned = True
        else:
            self._owned = False
        self.con = connection
        self.timeout_s = timeout_s
        self.max_rows = max_rows

    def __call__(self, sql: str) -> list[tuple[Any, ...]]:
        cursor = self.con.cursor()
        timer = threading.Timer(self.timeout_s, cursor.interrupt)
        timer.start()
        try:
            return list(cursor.execute(sql).fetchmany(self.max_rows))
        finally:
            timer.cancel()
            cursor.close()

    probe = __call__

    def close(self) -> None:
        if self._owned:
            self.con.close()

    def __enter__(self) -> DuckDBProbeRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def duckdb_probe_runner(path: str | Path, timeout_s: float = 10.0) -> DuckDBProbeRunner:
    """A read-only probe runner over a DuckDB file (`with duckdb_probe_runner(p) as run: ...`)."""
    return DuckDBProbeRunner(path=path, timeout_s=timeout_s)


class PostgresProbeRunner:
    """Read-only PostgreSQL probes for a warehouse that moved to PostgreSQL (DESIGN §9)."""

    def __init__(self, conninfo: str, timeout_ms: int = 10_000) -> None:
        import psycopg

        self.con = psycopg.connect(conninfo, autocommit=True)
        self.timeout_ms = timeout_ms

    def __call__(self, sql: str) -> list[tuple[Any, ...]]:
        with self.con.transaction():
            self.con.execute("SET TRANSACTION READ ONLY")
            self.con.execute(
                "SELECT set_config('statement_timeout', %s, true)", (str(self.timeout_ms),)
            )
            rows = self.con.execute(sql).fetchmany(1)  # type: ignore[arg-type]
        return list(rows)

    probe = __call__

    def close(self) -> None:
        self.con.close()
