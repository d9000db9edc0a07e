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
    # All columns from one parse and qualification (per column, each call repeats both).
    roots = lineage(None, sql, schema, dialect="duckdb")
    out: dict[str, list[str]] = {}
    for col in table.columns:
        root = roots.get(col.name) or lineage(col.name, sql, schema, dialect="duckdb")
        deps = []
        for node in root.walk():
            if isinstance(node.expression, exp.Table):
                name = exp.to_column(node.name, dialect="duckdb").name
                if name not in deps:
                    deps.append(name)
        out[col.name] = deps
    return out


Lineage = dict[str, dict[str, list[dict[str, str]]]]


def manifest_lineage(manifest: Manifest, known: Lineage | None = None) -> Lineage:
    """table -> column -> [{source, file, column}] for a reviewer-readable artifact. `known`:
    entries of tables whose plan is unchanged since they were derived (sqlglot's lineage costs
    tens of ms a table; an incremental reload re-derives only the changed tables)."""
    out: Lineage = {}
    for table in manifest.tables:
        if known and table.name in known:
            out[table.name] = known[table.name]
            continue
        out[table.name] = {
            col: [{"source": table.sources[0], "file": table.files_label(), "column": dep} for dep in deps]
            for col, deps in table_lineage(table).items()
        }
    return out
