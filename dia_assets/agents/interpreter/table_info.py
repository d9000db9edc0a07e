"""What key inference knows about a profiled table, shared by primary and foreign keys."""

from __future__ import annotations

from dataclasses import dataclass

from dia_assets.agents.interpreter.semantic import id_like_name
from dia_assets.contracts.interpretation import Column, Source

HIGH = 0.8  # "high" confidence: what the Schema Creator acts on without review
NOT_KEYABLE = {"decimal", "currency", "percentage", "free_text", "json", "boolean",
               "latitude", "longitude", "timestamp", "time"}
INT_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
             "UINTEGER", "UBIGINT")


@dataclass
class TableInfo:
    source: Source
    table: str  # the DuckDB table the source was read into


def keyable(col: Column) -> bool:
    return col.semantic_type not in NOT_KEYABLE and not col.inferred_type.startswith(("DECIMAL", "DOUBLE"))


def column_key_score(source: Source, col: Column) -> float:
    """How much a column looks like an identifier, in [0, 1]."""
    if not keyable(col):
        return 0.0
    if col.semantic_type in ("postal_code", "phone", "email", "country"):
        return 0.3
    if id_like_name(col.name):
        return 1.0
    return {"id": 0.8, "integer": 0.6, "email": 0.3}.get(col.semantic_type, 0.4)


def complete(col: Column) -> bool:
    return col.null_count + col.blank_count + col.null_token_count == 0
