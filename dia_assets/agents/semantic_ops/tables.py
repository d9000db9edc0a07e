"""Reading an operator's input column and writing its results as DuckDB tables with
provenance: `_row` (input row number), `_stage` (who decided) and `_score` (embedding
score). A `<out>__decisions` table keeps every row's decision, kept or not."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import duckdb
import pyarrow as pa

from dia_assets.agents.semantic_ops.models import Decision, SemanticOpError

PROVENANCE = ("_row", "_stage", "_score", "_confidence")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*){0,2}$")


def quote(name: str) -> str:
    """A table name (optionally schema-qualified) as quoted identifiers; refuses anything
    that is not a plain dotted name, so a name can never carry SQL."""
    if not _NAME.match(name or ""):
        raise SemanticOpError(f"not a table name: {name!r} (letters, digits, _ and dots only)")
    return ".".join('"' + part + '"' for part in name.split("."))


def qcol(name: str) -> str:
    return '"' + str(name).replace('"', '""') + '"'


def columns_of(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    try:
        return [d[0] for d in con.execute(f"SELECT * FROM {quote(table)} LIMIT 0").description]
    except duckdb.Error as err:
        raise SemanticOpError(f"cannot read table {table!r}: {str(err).splitlines()[0]}") from err


def stage_input(con: duckdb.DuckDBPyConnection, table: str, column: str, alias: str) -> list[tuple[str, str]]:
    """Copy the input into a temp table numbered by `_row` and return (row id, text) pairs.
    Provenance columns of an earlier operator are dropped from the copy (they stay in that
    operator's own tables)."""
    cols = columns_of(con, table)
    if column not in cols:
        near = ", ".join(cols[:20])
        raise SemanticOpError(f"table {table!r} has no column {column!r} (columns: {near})")
    keep = ", ".join(qcol(c) for c in cols if c not in PROVENANCE)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {qcol(alias)} AS "
                f"SELECT row_number() OVER () AS _row, {keep} FROM {quote(table)}")
    rows = con.execute(f"SELECT _row, {qcol(column)} FROM {qcol(alias)} ORDER BY _row").fetchall()
    return [(str(r), "" if t is None else str(t)) for r, t in rows]


def _value_text(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def write_decisions(con: duckdb.DuckDBPyConnection, name: str, decisions: Sequence[Decision],
                    id_columns: Sequence[str] = ("_row",)) -> None:
    """`name` with one row per decision; a pair id `l|r` splits into two columns."""
    cols: dict[str, list[Any]] = {c: [] for c in id_columns}
    values, stages, scores, confs = [], [], [], []
    for d in decisions:
        parts = d.id.split("|")
        for c, part in zip(id_columns, parts, strict=True):
            cols[c].append(int(part))
        values.append(_value_text(d.value))
        stages.append(d.stage)
        scores.append(d.score)
        confs.append(d.confidence)
    table = pa.table({**{c: pa.array(v, pa.int64()) for c, v in cols.items()},
                      "value": pa.array(values, pa.string()), "_stage": pa.array(stages, pa.string()),
                      "_score": pa.array(scores, pa.float64()), "_confidence": pa.array(confs, pa.float64())})
    con.register("__sem_decisions", table)
    try:
        con.execute(f"CREATE OR REPLACE TABLE {quote(name)} AS SELECT * FROM __sem_decisions")
    finally:
        con.unregister("__sem_decisions")


def drop_temp(con: duckdb.DuckDBPyConnection, alias: str) -> None:
    con.execute(f"DROP TABLE IF EXISTS {qcol(alias)}")
