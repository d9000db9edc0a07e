"""Markdown views of a manifest for readers without a Mermaid or column-lineage renderer
(the open-source Dagster UI shows Markdown metadata, not Mermaid or `dagster/column_lineage`)."""

from __future__ import annotations

from dia_assets.agents.schema_creator.lineage import table_lineage
from dia_assets.contracts.manifest import Manifest, ManifestColumn, ManifestTable
from dia_assets.platform.markdown import cell


def parse_applied(col: ManifestColumn) -> str:
    """How the load turns the file's text into the column's value, in words."""
    fmt = col.value_format
    steps = [f"cast to {col.type}"]
    if fmt.date_formats:
        steps.append("date format " + " or ".join(f"`{f}`" for f in fmt.date_formats))
    if fmt.decimal_separator != "." or fmt.thousands_separator:
        steps.append(f"decimal `{fmt.decimal_separator}`" + (f", thousands `{fmt.thousands_separator}`"
                                                              if fmt.thousands_separator else ""))
    if fmt.currency_symbols:
        steps.append("currency " + " ".join(f"`{s}`" for s in fmt.currency_symbols) + " removed")
    if fmt.percent:
        steps.append("percent sign removed")
    if fmt.true_values or fmt.false_values:
        steps.append(f"booleans {'/'.join(fmt.true_values)} vs {'/'.join(fmt.false_values)}")
    if fmt.null_tokens:
        steps.append("null tokens " + ", ".join(f"`{t}`" for t in fmt.null_tokens))
    if fmt.trim:
        steps.append("trimmed")
    if col.blank_as_null:
        steps.append("blank as NULL")
    if col.category_map:
        steps.append(f"{len(col.category_map)} spellings mapped")
    if col.on_error == "null_value":
        steps.append("bad value NULLed (raw in rejects)")
    return "; ".join(steps)


def lineage_markdown(table: ManifestTable) -> str:
    """One row per refined column: `column <- file.column`, with the parse applied."""
    lineage = table_lineage(table)
    lines = ["| column | <- from file.column | parse applied |", "|---|---|---|"]
    for col in table.columns:
        sources = lineage.get(col.name) or [col.source_column]
        origin = ", ".join(f"{table.source_ref}.{s}" for s in sources)
        lines.append(f"| {cell(col.name)} | {cell(origin)} | {cell(parse_applied(col))} |")
    return "\n".join(lines)


def foreign_key_targets(table: ManifestTable) -> dict[str, str]:
    """Column -> `table.column` it references."""
    return {c: f"{fk.ref_table}.{rc}" for fk in table.foreign_keys for c, rc in zip(fk.columns, fk.ref_columns, strict=False)}


def er_markdown(manifest: Manifest) -> str:
    """The ER diagram as a table of relationships, then each table's keys."""
    lines = ["| table | primary key | columns | references |", "|---|---|---:|---|"]
    for table in manifest.tables:
        refs = "; ".join(f"({', '.join(fk.columns)}) -> {fk.ref_table}({', '.join(fk.ref_columns)})"
                         + (" orphans allowed" if fk.allow_orphans else "") for fk in table.foreign_keys)
        lines.append(f"| {cell(table.name)} | {cell(', '.join(table.primary_key) or '-')} | {len(table.columns)} "
                     f"| {cell(refs or '-')} |")
    return "\n".join(lines)


def decisions_markdown(manifest: Manifest) -> str:
    """Every planning decision, one row each."""
    if not manifest.decisions:
        return "No decisions."
    lines = ["| table | column | decision | origin |", "|---|---|---|---|"]
    for d in manifest.decisions:
        lines.append(f"| {cell(d.table)} | {cell(d.column or '-')} | {cell(d.what)} | {d.origin} |")
    return "\n".join(lines)
