"""Human-readable views of an interpretation: the review document and a terminal summary."""

from __future__ import annotations

from dia_assets.contracts.interpretation import Interpretation, Source
from dia_assets.contracts.policy import HIGH
from dia_assets.platform.markdown import table


def sources_table(interp: Interpretation) -> str:
    rows = []
    for s in interp.sources:
        pk = f"({', '.join(s.primary_key.columns)}) {s.primary_key.confidence:.2f}" if s.primary_key else "-"
        status = "ok" if s.parse.ok else "error: " + "; ".join(s.parse.errors)
        files = " + ".join(f.path for f in s.file_list())
        rows.append([s.name, files, s.format, s.row_count, len(s.columns), pk, status])
    return table(["source", "file", "format", "rows", "columns", "primary key", "status"], rows,
                 right={"rows", "columns"})


def foreign_keys_table(interp: Interpretation) -> str:
    return table(["from", "to", "coverage", "orphans", "confidence", "evidence"], [
        [f"{fk.from_.source}.{'/'.join(fk.from_.columns)}", f"{fk.to.source}.{'/'.join(fk.to.columns)}",
         f"{fk.coverage:.3f}", fk.orphan_count, f"{fk.confidence:.2f}", "; ".join(fk.evidence)]
        for fk in interp.foreign_keys], right={"coverage", "orphans", "confidence"})


def quality_issues_table(interp: Interpretation) -> str:
    """Every quality issue, one row each, with the action the expert may take."""
    if not interp.quality_issues:
        return "No quality issues."
    return table(["source", "column", "kind", "severity", "count", "message", "suggested action"], [
        [q.source, q.column or "-", q.kind, q.severity, q.count, q.message, q.suggested_action]
        for q in interp.quality_issues], right={"count"})


def _columns_table(src: Source) -> str:
    """One row per column; the examples are data (the first 80 characters of three)."""
    return table(
        ["column", "semantic", "SQL type", "nulls", "blanks", "null tokens", "distinct", "unparseable", "examples"],
        [[c.name if c.name == c.original_name else f"{c.name} (`{c.original_name}`)", c.semantic_type,
          c.inferred_type, c.null_count, c.blank_count, c.null_token_count, c.distinct_count, c.unparseable_count,
          ", ".join(str(e) for e in c.examples[:3])[:80]] for c in src.columns],
        right={"nulls", "blanks", "null tokens", "distinct", "unparseable"})


def to_markdown(interp: Interpretation) -> str:
    """The document an expert reviews before the Schema Creator acts on it."""
    out = [
        "# Data interpretation", "",
        f"Folder `{interp.data_dir}`, generated {interp.generated_at}"
        + (f", descriptions by `{interp.llm_model}`" if interp.llm_model else "") + ".", "",
        "## Sources", "", sources_table(interp), "",
        "## Foreign keys", "", f"Confidence >= {HIGH} is acted on without review.", "",
        foreign_keys_table(interp), "",
        "## Quality issues", "",
        table(["source", "column", "kind", "count", "message", "suggested action"], [
            [q.source, q.column or "", q.kind, q.count, q.message, q.suggested_action]
            for q in interp.quality_issues], right={"count"}),
    ]
    if interp.file_groups:
        out += ["", "## Files that may be one table", "", table(["table", "files", "read as", "status", "why"], [
            [g.name, ", ".join(g.files), ", ".join(g.sources), g.status, g.reason] for g in interp.file_groups])]
    if interp.join_paths:
        out += ["", "## Join paths", ""]
        out += [f"- {' -> '.join(p.sources)}: `{' AND '.join(p.joins)}`" for p in interp.join_paths if len(p.sources) > 2]
        out += [f"- {p.sources[0]} <-> {p.sources[1]}: `{p.joins[0]}`" for p in interp.join_paths if len(p.sources) == 2]
    for src in interp.sources:
        out += ["", f"## {src.name}", ""]
        if src.description:
            out += [f"{src.description} _(LLM)_", ""]
        parse = src.parse
        facts = [f"format {src.format}", f"{src.row_count} rows", f"{src.duplicate_rows} exact duplicate rows"]
        if src.files:
            facts.append("the union of " + ", ".join(f"{f.path} ({f.row_count} rows)" for f in src.files))
        if parse.encoding:
            facts.append(f"encoding {parse.encoding}")
        if parse.delimiter:
            facts.append(f"delimiter {parse.delimiter!r}")
        if parse.record_terminator and parse.record_terminator != "\n":
            facts.append(f"record terminator {parse.record_terminator!r}")
        if src.format == "csv" and not parse.header:
            facts.append("no header row")
        if parse.confidence < 1.0:
            facts.append(f"parse confidence {parse.confidence}")
        if src.declared:
            facts.append(f"declared in {src.declared.schema_file}")
        if parse.header_row:
            facts.append(f"header on row {parse.header_row}")
        if src.parent:
            facts.append(f"child of {src.parent.source} via {', '.join(src.parent.columns)}")
        out += ["- " + "; ".join(facts)]
        if src.primary_key:
            out += [f"- primary key ({', '.join(src.primary_key.columns)}), confidence "
                    f"{src.primary_key.confidence:.2f}: {src.primary_key.reason}"]
        if src.columns:
            out += ["", _columns_table(src)]
    return "\n".join(out) + "\n"


def summary(interp: Interpretation) -> str:
    """A few lines for a terminal."""
    rows = sum(s.row_count for s in interp.sources)
    bad = [s for s in interp.sources if not s.parse.ok]
    pks = sum(1 for s in interp.sources if s.primary_key)
    high = [fk for fk in interp.foreign_keys if fk.confidence >= HIGH]
    lines = [
        f"{len(interp.sources)} sources, {rows:,} rows"
        + (f", {len(bad)} unreadable ({', '.join(s.path for s in bad)})" if bad else ""),
        f"primary keys: {pks}/{len(interp.sources)}  "
        + ", ".join(f"{s.name}({', '.join(s.primary_key.columns)})" for s in interp.sources if s.primary_key),
        f"foreign keys: {len(high)} high confidence, {len(interp.foreign_keys) - len(high)} to review",
    ]
    lines += [
        f"  {fk.from_.source}.{'/'.join(fk.from_.columns)} -> {fk.to.source}.{'/'.join(fk.to.columns)}"
        f"  coverage {fk.coverage:.3f}, {fk.orphan_count} orphan rows, confidence {fk.confidence:.2f}"
        for fk in interp.foreign_keys
    ]
    by_kind: dict[str, int] = {}
    for q in interp.quality_issues:
        by_kind[q.kind] = by_kind.get(q.kind, 0) + 1
    lines.append(f"quality issues: {len(interp.quality_issues)}  "
                 + ", ".join(f"{k} {n}" for k, n in sorted(by_kind.items())))
    return "\n".join(lines)
