"""Probe verification: a lesson is usable only after its precondition holds on the current data.

Convention: a probe *confirms* when it executes and returns at least one row whose first
value is truthy (`SELECT count(*) > 1 FROM ...`, `SELECT 1 FROM ... LIMIT 1`). No rows, a
falsy first value (false, 0, NULL, '') or an error refute it. Probes run read-only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from dia_assets.platform.memory.models import MemoryItem, Tier, VerificationResult

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


class GatedProbeRunner:
    """Memory probes through the Query Generator's own gate and connections: the same
    allow-list, the same least-privileged connection, the same privacy mode (DIA_PRIVACY)
    as the agent's probes. One door, so a lesson cannot reach what a probe cannot."""

    @classmethod
    def open(cls, target: str | Path, timeout_s: float = 10.0, max_rows: int = 1) -> GatedProbeRunner:
        """Probes on any warehouse target, through the engine's least-privileged `connect()`."""
        from dia_assets.platform.warehouse.base import connect

        return cls(connect(target), timeout_s, max_rows)

    def __init__(self, db: Any, timeout_s: float = 10.0, max_rows: int = 1) -> None:
        from dia_assets.platform.sql.gate import Gate, privacy_mode, schema_of

        self.db = db
        self.gate = Gate(db, schema_of(db), privacy_mode())
        self.timeout_s = timeout_s
        self.max_rows = max_rows

    def __call__(self, sql: str) -> list[tuple[Any, ...]]:
        return [tuple(r) for r in self.gate.rows(sql, self.max_rows, self.timeout_s)]

    probe = __call__

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> GatedProbeRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def duckdb_probe_runner(path: str | Path, timeout_s: float = 10.0) -> GatedProbeRunner:
    """A read-only probe runner over a DuckDB file (`with duckdb_probe_runner(p) as run: ...`)."""
    return GatedProbeRunner.open(path, timeout_s=timeout_s)
