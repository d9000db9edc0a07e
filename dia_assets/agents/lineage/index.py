"""Build the lineage index of a workspace: the tables of the installed build with their files,
parses and row ranges, and every saved answer with what its SQL read."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dia_assets.contracts.interpretation import Interpretation
from dia_assets.contracts.lineage import (
    AnswerReads,
    ColumnOrigin,
    LineageIndex,
    RowRange,
    TableOrigin,
    ValueOrigin,
)
from dia_assets.contracts.manifest import Manifest, ManifestTable
from dia_assets.contracts.query_result import QueryResult
from dia_assets.platform.naming import quote_ident as q
from dia_assets.platform.sql.reads import sql_reads
from dia_assets.platform.warehouse.base import target_dialect
from dia_assets.platform.workspace import Workspace

log = logging.getLogger("dia.lineage")


class LineageError(ValueError):
    """A question the lineage cannot answer (no build, unknown table or column, bad value)."""


def workspace_manifest(workspace: str | Path) -> Manifest:
    """The plan the warehouse in place was built from (else the last plan)."""
    ws = Workspace(workspace)
    for path in (ws.installed_manifest, ws.manifest):
        if path.exists():
            return Manifest.read(path)
    raise LineageError(f"no schema manifest in {ws.schema_dir}: run `dia build` first")


def _interpretation(workspace: Path) -> Interpretation | None:
    path = Workspace(workspace).interpretation
    try:
        return Interpretation.read(path) if path.exists() else None
    except (ValueError, OSError):
        return None


def schema_of(manifest: Manifest) -> dict[str, dict[str, str]]:
    """{table: {column: type}} in lower case, for sqlglot."""
    return {t.name.lower(): {c.name.lower(): c.type for c in t.columns} for t in manifest.tables}


def table_origin(table: ManifestTable, interp: Interpretation | None) -> TableOrigin:
    source = next((s for s in interp.sources if s.name == table.sources[0]), None) if interp else None
    parse: dict[str, Any] = {}
    if source is not None:
        keep = ("delimiter", "record_terminator", "quote", "header", "header_row", "encoding", "sheet",
                "json_path", "bad_rows", "rewritten", "confidence")
        parse = {k: v for k, v in source.parse.model_dump().items() if k in keep and v not in (None, [], "")}
    return TableOrigin(
        table=table.name, source=table.sources[0], source_path=table.source_path,
        source_ref=table.files_label(), source_format=table.source_format,
        content_hash=table.content_hash, parse=parse, staging_table=f"staging.{table.name}",
        reject_table=f"rejects.{table.name}",
        columns=[ColumnOrigin(
            table=table.name, column=c.name, type=c.type, source_column=c.source_column,
            original_name=c.original_name,
            value_format={k: v for k, v in c.value_format.model_dump().items() if v not in (None, [], False, ".")},
            normalizations=list(c.normalizations), category_map=dict(c.category_map),
        ) for c in table.columns],
    )


def answers(workspace: str | Path, manifest: Manifest) -> list[AnswerReads]:
    """Every saved answer under `queries/`, with the tables and columns its SQL read."""
    schema = schema_of(manifest)
    out = []
    for path in Workspace(workspace).saved_answers():
        try:
            result = QueryResult.read(path)
        except (ValueError, OSError) as exc:
            log.warning("skipping unreadable answer %s: %s", path, str(exc).splitlines()[0])
            continue
        reads = result.reads or (sql_reads(result.sql, schema, result.dialect) if result.sql else {})
        out.append(AnswerReads(
            question_id=result.question_id, question=result.question, status=result.status, sql=result.sql,
            dialect=result.dialect, reads=reads, outputs=dict(result.lineage), path=str(path.parent),
        ))
    return out


def build_index(workspace: str | Path, warehouse: str | None = None) -> LineageIndex:
    """The whole index; row ranges are measured when the warehouse can be opened."""
    ws = Path(workspace)
    manifest = workspace_manifest(ws)
    interp = _interpretation(ws)
    index = LineageIndex(generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
                         warehouse=target_dialect(warehouse).redacted_target if warehouse and target_dialect(warehouse).credentials_in_target
                         else str(warehouse or ""),
                         tables=[table_origin(t, interp) for t in manifest.tables],
                         answers=answers(ws, manifest))
    if warehouse and (not target_dialect(warehouse).file_based or Path(warehouse).exists()):
        from dia_assets.platform.tables.target import Target

        with Target(warehouse) as target:
            for origin in index.tables:
                origin.row_range = _row_range(target, f"staging.{q(origin.table)}")
    return index


def _row_range(target: Any, staging: str, where: str = "") -> RowRange | None:
    try:
        first, last, rows = target.rows(f"SELECT min(_source_row), max(_source_row), count(*) FROM {staging} {where}")[0]
    except Exception as exc:  # noqa: BLE001 - a table missing from the warehouse has no range
        log.warning("no row range for %s: %s", staging, str(exc).splitlines()[0])
        return None
    return RowRange(first=first, last=last, rows=int(rows or 0))


def value_origin(manifest: Manifest, warehouse: str, table: str, column: str, value: str) -> ValueOrigin:
    """The staged records of `table` whose text parses to `value` in `column` (as the load
    parses it), with their row numbers in the file and their raw texts."""
    from dia_assets.agents.value_parsing import value_sql
    from dia_assets.platform.naming import sql_str
    from dia_assets.platform.tables.target import Target

    try:
        mt = manifest.table(table)
        col = mt.column(column)
    except KeyError as exc:
        raise LineageError(str(exc).strip("'\"")) from None
    parsed = value_sql(col, q(col.source_column))
    where = f"WHERE {parsed} = TRY_CAST({sql_str(value)} AS {col.type})"
    staging = f"staging.{q(mt.name)}"
    with Target(warehouse) as target:
        try:  # PostgreSQL has no TRY_CAST: sqlglot writes CAST, which raises instead
            bad = target.scalar(f"SELECT TRY_CAST({sql_str(value)} AS {col.type}) IS NULL")
        except Exception:  # noqa: BLE001 - any driver error here means the value does not parse
            bad = True
        if bad:
            raise LineageError(f"{value!r} is not a {col.type} value of {mt.name}.{col.name}")
        row_range = _row_range(target, staging, where) or RowRange()
        numbers = [r[0] for r in target.rows(f"SELECT _source_row FROM {staging} {where} ORDER BY 1 LIMIT 20")]
        raws = [r[0] for r in target.rows(
            f"SELECT DISTINCT CAST({q(col.source_column)} AS VARCHAR) FROM {staging} {where} ORDER BY 1 LIMIT 5")]
    return ValueOrigin(table=mt.name, column=col.name, value=value, source_ref=mt.files_label(),
                       rows=row_range.rows, row_range=row_range, row_numbers=numbers, raw_texts=raws)
