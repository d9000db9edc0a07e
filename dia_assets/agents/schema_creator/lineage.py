"""Column lineage of refined tables, derived from the load SQL with sqlglot."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.lineage import lineage

from dia_assets.agents.schema_creator.sqlgen import PROVENANCE, refined_select_sql
from dia_assets.contracts.manifest import Manifest, ManifestTable


def table_lineage(table: ManifestTable) -> dict[str, list[str]]:
    """Refined column -> staging (= source) columns it is computed from, read off the
    SELECT that the load inserts into the refined table."""
    sql = refined_select_sql(table)
    columns = {c: "VARCHAR" for c in table.source_columns} | {n: t for n, t in PROVENANCE}
    schema = {"staging": {table.name: columns}}
    out: dict[str, list[str]] = {}
    for col in table.columns:
        root = lineage(col.name, sql, schema, dialect="duckdb")
        deps = []
        for node in root.walk():
            if isinstance(node.expression, exp.Table):
                name = exp.to_column(node.name, dialect="duckdb").name
                if name not in deps:
                    deps.append(name)
        out[col.name] = deps
    return out


def manifest_lineage(manifest: Manifest) -> dict[str, dict[str, list[dict[str, str]]]]:
    """table -> column -> [{source, file, column}] for a reviewer-readable artifact."""
    out: dict[str, dict[str, list[dict[str, str]]]] = {}
    for table in manifest.tables:
        out[table.name] = {
            col: [{"source": table.sources[0], "file": table.source_ref, "column": dep} for dep in deps]
            for col, deps in table_lineage(table).items()
        }
    return out
