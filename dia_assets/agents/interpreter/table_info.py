"""What key inference knows about a profiled table, shared by primary and foreign keys."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from dia_assets.agents.interpreter.semantic import id_like_name
from dia_assets.contracts.interpretation import Column, Source

NOT_KEYABLE = {"decimal", "currency", "percentage", "free_text", "json", "boolean",
               "latitude", "longitude", "timestamp", "time"}
INT_TYPES = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
             "UINTEGER", "UBIGINT")


class TableInfo:
    """A profiled source and the DuckDB table it was read into. The table may be read on first
    use (`table` given as a function that reads it and returns its name): a file whose bytes
    have not changed keeps its profile and keys, and is read only if a query needs its rows."""

    def __init__(self, source: Source, table: str | Callable[[], str]) -> None:
        self.source = source
        self._table = table

    @property
    def table(self) -> str:
        if callable(self._table):
            self._table = self._table()
        return self._table


class Tables(Mapping[str, str]):
    """Source name -> DuckDB table, each read on first use (see `TableInfo`)."""

    def __init__(self, infos: list[TableInfo]) -> None:
        self._infos = {i.source.name: i for i in infos}

    def __getitem__(self, name: str) -> str:
        return self._infos[name].table

    def __iter__(self) -> Iterator[str]:
        return iter(self._infos)

    def __len__(self) -> int:
        return len(self._infos)


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
