"""Column lineage for the MCP `lineage` tool, from what exists today: an answer's result
columns -> warehouse columns (platform/sql/lineage.py, sqlglot over the answer's SQL), and
warehouse columns -> source files and columns (agents/schema_creator/lineage.py, written to
`schema/lineage.json` by every build).

`lineage_of` is the one entry point; for a table or column it also lists the saved answers
whose SQL read it (agents/lineage, the same index as `dia lineage`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from dia_assets.platform.sql.lineage import column_lineage
from dia_assets.platform.workspace import Workspace


def warehouse_lineage(workspace: Path) -> dict[str, dict[str, list[dict[str, str]]]]:
    """table -> column -> [{source, file, column}], from the last build's schema/lineage.json
    (else derived from the manifest); empty when no build has run."""
    path = Workspace(workspace).schema_lineage
    if path.exists():
        return json.loads(path.read_text(encoding="utf-8"))
    manifest = Workspace(workspace).manifest
    if manifest.exists():
        from dia_assets.agents.schema_creator import manifest_lineage
        from dia_assets.contracts.manifest import Manifest

        return manifest_lineage(Manifest.read(manifest))
    return {}


def _sources(tables: dict[str, dict[str, list[dict[str, str]]]], ref: str) -> list[dict[str, str]]:
    table, _, column = ref.partition(".")
    cols = next((c for t, c in tables.items() if t.lower() == table.lower()), {})
    return next((s for c, s in cols.items() if c.lower() == column.lower()), [])


def _result_lineage(columns: dict[str, list[str]], tables: dict[str, Any]) -> dict[str, Any]:
    return {out: [{"warehouse": ref, "sources": _sources(tables, ref)} for ref in refs]
            for out, refs in columns.items()}


def lineage_of(target: str, workspace: Path, schema: dict[str, dict[str, str]], dialect: str) -> dict[str, Any]:
    """Lineage of a saved answer (its question id), of a warehouse `table` or `table.column`,
    or of a SELECT (checked by the caller's gate first). Raises ValueError naming what exists."""
    tables = warehouse_lineage(workspace)
    text = target.strip()
    answer = Workspace(workspace).query(text).result
    if 0 < len(text) <= 200 and "/" not in text and answer.exists():  # question ids are short names
        from dia_assets.contracts.query_result import QueryResult

        result = QueryResult.read(answer)
        return {"kind": "answer", "question_id": text, "question": result.question, "sql": result.sql,
                "columns": _result_lineage(result.lineage, tables)}
    if text.lower().startswith(("select", "with", "(")):
        return {"kind": "sql", "columns": _result_lineage(column_lineage(text, schema, dialect), tables)}
    table, _, column = text.partition(".")
    cols = next((c for t, c in tables.items() if t.lower() == table.lower()), None)
    if cols is None and table.lower() in schema:  # a warehouse DIA did not build: no source files known
        cols = {c: [] for c in schema[table.lower()]}
    if cols is None:
        known = sorted(set(tables) | set(schema))
        shown = target if len(target) <= 80 else target[:80] + "…"
        raise ValueError(f"no saved answer, table or SQL {shown!r}; tables: {', '.join(known) or '(none)'}")
    if column:
        match = next((c for c in cols if c.lower() == column.lower()), None)
        if match is None:
            shown = column if len(column) <= 80 else column[:80] + "…"
            raise ValueError(f"table {table} has no column {shown!r}; columns: {', '.join(cols)}")
        return {"kind": "column", "table": table, "column": match, "sources": cols[match],
                "read_by": _read_by(workspace, table, match)}
    return {"kind": "table", "table": table, "columns": cols, "read_by": _read_by(workspace, table, None)}


def _read_by(workspace: Path, table: str, column: str | None) -> list[dict[str, str]]:
    """The saved answers whose SQL read `table` (or `table.column`)."""
    from dia_assets.agents.lineage import LineageError, answers, workspace_manifest

    try:
        saved = answers(workspace, workspace_manifest(workspace))
    except LineageError:
        return []
    out = []
    for a in saved:
        cols = next((c for t, c in a.reads.items() if t.lower() == table.lower()), None)
        if cols is not None and (column is None or column.lower() in {c.lower() for c in cols}):
            out.append({"question_id": a.question_id, "question": a.question, "status": a.status})
    return out
