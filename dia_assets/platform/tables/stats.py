"""Statistics of installed refined tables, read with SQL from the warehouse itself.

The interpreter profiles the *source file* (raw spellings, duplicates, rows later rejected);
what a table asset and the catalog report must describe the *table* the build installed, so
these figures come from COUNT(*), COUNT(DISTINCT), null counts and MIN/MAX over it."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path

import duckdb

from dia_assets.contracts.artifact import write_atomic
from dia_assets.platform.naming import quote_ident as q
from dia_assets.platform.tables.target import Target
from dia_assets.platform.warehouse.base import target_dialect
from dia_assets.platform.warehouse.fingerprint import file_identity
from dia_assets.platform.workspace import Workspace

# Aggregates per query: one scan per chunk keeps very wide tables within the planner's limits.
CHUNK = 100
# Types whose values have an order worth showing as a range (information_schema spellings).
ORDERED = re.compile(r"int|numeric|decimal|double|real|float|date|time|interval|char|text|uuid", re.I)
# Types without equality in PostgreSQL (no COUNT(DISTINCT)).
NO_EQUALITY = re.compile(r"^json$|^xml$|^point$", re.I)


@dataclass(frozen=True)
class ColumnStats:
    name: str
    type: str
    distinct: int | None
    nulls: int
    min: str | None = None
    max: str | None = None


@dataclass(frozen=True)
class TableStats:
    table: str
    rows: int
    columns: dict[str, ColumnStats] = field(default_factory=dict)

    def describe(self, column: str) -> str:
        """One line for a column's schema entry: distinct values, null share, range."""
        c = self.columns.get(column)
        if c is None:
            return "not in the installed table"
        share = c.nulls / self.rows if self.rows else 0.0
        parts = ([f"{c.distinct} distinct"] if c.distinct is not None else []) + [f"{share:.1%} null"]
        if c.min is not None and c.max is not None:
            parts.append(f"range {c.min} .. {c.max}")
        return ", ".join(parts)


def _aggregates(name: str, dtype: str) -> list[str]:
    col = q(name)
    out = ["NULL" if NO_EQUALITY.search(dtype) else f"count(DISTINCT {col})", f"count(*) - count({col})"]
    if ORDERED.search(dtype):
        out += [f"CAST(min({col}) AS VARCHAR)", f"CAST(max({col}) AS VARCHAR)"]
    else:
        out += ["NULL", "NULL"]
    return out


def table_stats(target: Target, table: str) -> TableStats | None:
    """Row count and per-column statistics of `table` (None when it is not installed)."""
    columns = target.columns(target.default_schema, table)
    if not columns:
        return None
    rows = int(target.scalar(f"SELECT count(*) FROM {q(table)}") or 0)
    stats: dict[str, ColumnStats] = {}
    for start in range(0, len(columns), CHUNK):
        chunk = columns[start:start + CHUNK]
        select = ", ".join(a for name, dtype in chunk for a in _aggregates(name, dtype))
        values = target.rows(f"SELECT {select} FROM {q(table)}")[0]
        for i, (name, dtype) in enumerate(chunk):
            distinct, nulls, lo, hi = values[4 * i:4 * i + 4]
            stats[name] = ColumnStats(name, dtype, None if distinct is None else int(distinct), int(nulls or 0),
                                      None if lo is None else str(lo), None if hi is None else str(hi))
    return TableStats(table, rows, stats)


def warehouse_stats(warehouse: str | Path, tables: list[str]) -> dict[str, TableStats]:
    """Statistics of each named table that the warehouse holds; {} when there is no warehouse."""
    if target_dialect(warehouse).file_based and not Path(warehouse).exists():
        return {}
    with Target(warehouse) as target:
        found = {name: table_stats(target, name) for name in tables}
    return {name: s for name, s in found.items() if s is not None}


def _dump(identity: str, stats: dict[str, TableStats]) -> str:
    return json.dumps({"identity": identity, "tables": {
        name: {"rows": s.rows, "columns": [asdict(c) for c in s.columns.values()]} for name, s in stats.items()}})


def _load(text: str, identity: str) -> dict[str, TableStats]:
    data = json.loads(text)
    if data.get("identity") != identity:
        return {}
    return {name: TableStats(name, t["rows"], {c["name"]: ColumnStats(**c) for c in t["columns"]})
            for name, t in data["tables"].items()}


def cached_stats(workspace: str | Path, warehouse: str | Path, tables: list[str]) -> dict[str, TableStats]:
    """`warehouse_stats` of a DuckDB warehouse, kept in `schema/table_stats.json` for the file in
    place (inode, size, mtime: a new build is a new file), so the code location, loaded by every
    process and run, reads the table's figures without scanning it each time. PostgreSQL and a
    warehouse that cannot be read now (a writer holds it) give {}: no figures rather than old ones."""
    path = Path(warehouse)
    if not target_dialect(warehouse).file_based or not path.exists():
        return {}
    identity, cache = file_identity(path), Workspace(workspace).table_stats
    try:
        known = _load(cache.read_text(encoding="utf-8"), identity)
    except (OSError, ValueError, KeyError, TypeError):
        known = {}
    missing = [t for t in tables if t not in known]
    if not missing:
        return {t: known[t] for t in tables}
    try:
        known |= warehouse_stats(path, missing)
    except (duckdb.Error, OSError):
        return {t: known[t] for t in tables if t in known}
    if file_identity(path) == identity and cache.parent.is_dir():  # not swapped while read
        write_atomic(cache, _dump(identity, known))
    return {t: known[t] for t in tables if t in known}


def installed_stats(workspace: str | Path, warehouse: str | Path, tables: list[str]) -> dict[str, TableStats]:
    """Right after a build: PostgreSQL read directly, DuckDB through the cache (filled here)."""
    if not target_dialect(warehouse).file_based:
        return warehouse_stats(warehouse, tables)
    return cached_stats(workspace, warehouse, tables)
