"""The memory's audit trail: one writer for every event (`dia memory show` lists an item's)."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.types.json import Jsonb

from dia_assets.platform.memory.migrations import SCHEMA


def write_event(
    conn: psycopg.Connection,
    item_id: int | None,
    event: str,
    scope: str | None,
    detail: dict[str, Any],
) -> None:
    """Append one event to the audit trail."""
    conn.execute(
        f"INSERT INTO {SCHEMA}.events (item_id, event, scope, detail) VALUES (%s, %s, %s, %s)",
        (item_id, event, scope, Jsonb(detail)),
    )
