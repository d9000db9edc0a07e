"""Markdown for the lineage: the CLI prints it, the `lineage_report` asset shows it."""

from __future__ import annotations

from dia_assets.contracts.lineage import AnswerReads, LineageIndex, TableOrigin, ValueOrigin
from dia_assets.platform import markdown


def rows_text(origin: TableOrigin) -> str:
    r = origin.row_range
    if r is None:
        return "(warehouse not read)"
    return f"rows {r.first}-{r.last} ({r.rows} records)" if r.rows else "no records"


def parse_text(origin: TableOrigin) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in origin.parse.items()) or origin.source_format


def answers_table(answers: list[AnswerReads]) -> str:
    if not answers:
        return "(no saved answer reads it)"
    return markdown.table(["question", "status", "reads"], [
        [f"{a.question_id}: {a.question}", a.status,
         "; ".join(f"{t}({', '.join(cols) or '*'})" for t, cols in a.reads.items())] for a in answers])


def tables_table(index: LineageIndex) -> str:
    return markdown.table(["table", "file", "parse", "file rows", "content hash", "read by"], [
        [t.table, t.source_ref, parse_text(t), rows_text(t), t.content_hash[:12],
         ", ".join(a.question_id for a in index.readers(t.table)) or "-"] for t in index.tables])


def columns_table(index: LineageIndex, origin: TableOrigin) -> str:
    return markdown.table(["column", "type", "from file column", "parsed with", "read by"], [
        [c.column, c.type, c.original_name or c.source_column,
         "; ".join([*(f"{k}={v}" for k, v in c.value_format.items()), *c.normalizations]) or "as text",
         ", ".join(a.question_id for a in index.readers(origin.table, c.column)) or "-"]
        for c in origin.columns])


def column_report(index: LineageIndex, table: str, column: str | None) -> str:
    """`dia lineage TABLE[.COLUMN]`: where it comes from, and which answers read it."""
    origin = index.table(table)
    assert origin is not None
    out = [f"# {origin.table}{'.' + column if column else ''}", "",
           f"- file: `{origin.source_ref}` ({origin.source_format}), content hash `{origin.content_hash[:16]}`",
           f"- parse: {parse_text(origin)}",
           f"- {rows_text(origin)} of the file, kept in `{origin.staging_table}` (`_source_file`, `_source_row`); "
           f"refused rows and values in `{origin.reject_table}`"]
    if column:
        c = origin.column(column)
        assert c is not None
        out.append(f"- column `{c.column}` ({c.type}) from the file's column `{c.original_name or c.source_column}`"
                   + (f", parsed with {c.value_format}" if c.value_format else "")
                   + (f"; {'; '.join(c.normalizations)}" if c.normalizations else ""))
    else:
        out += ["", columns_table(index, origin)]
    out += ["", "## Answers that read it", "", answers_table(index.readers(origin.table, column))]
    return "\n".join(out) + "\n"


def question_report(index: LineageIndex, answer: AnswerReads) -> str:
    """`dia lineage --question ID`: the SQL, each output column's warehouse columns, and the
    files, parses and row ranges behind every table it read."""
    out = [f"# {answer.question_id}: {answer.question}", "", f"status: {answer.status}", "",
           f"```sql\n{(answer.sql or '').strip()}\n```", ""]
    if answer.outputs:
        out += ["## Result columns", "", markdown.table(["result column", "from"], [
            [name, ", ".join(srcs) or "(computed, no column)"] for name, srcs in answer.outputs.items()]), ""]
    rows = []
    for table, cols in answer.reads.items():
        origin = index.table(table)
        if origin is None:
            rows.append([table, ", ".join(cols), "(not in the installed build)", "", ""])
            continue
        files = [(origin.column(c).original_name or origin.column(c).source_column) if origin.column(c) else c
                 for c in cols]
        rows.append([table, ", ".join(cols) or "*", f"{origin.source_ref} ({', '.join(files) or 'all rows'})",
                     parse_text(origin), rows_text(origin)])
    out += ["## Where the values came from", "",
            markdown.table(["table", "columns read", "file (columns)", "parse", "file rows"], rows)]
    return "\n".join(out) + "\n"


def value_report(value: ValueOrigin) -> str:
    r = value.row_range
    where = f"rows {r.first}-{r.last}" if value.rows else "no row"
    return (f"{value.table}.{value.column} = {value.value!r}: {value.rows} record(s) of `{value.source_ref}`, "
            f"{where}" + (f" (rows {', '.join(map(str, value.row_numbers))}"
                          f"{', ...' if value.rows > len(value.row_numbers) else ''})" if value.rows else "")
            + (f"; written in the file as {', '.join(repr(t) for t in value.raw_texts)}" if value.raw_texts else "")
            + "\n")


def index_report(index: LineageIndex) -> str:
    """The whole lineage as the `lineage_report` asset and `lineage/report.md` show it."""
    return "\n".join([
        "# Lineage", "", f"{len(index.tables)} table(s), {len(index.answers)} saved answer(s); {index.generated_at}", "",
        "## Tables and their files", "", tables_table(index), "",
        "## Answers and what they read", "", answers_table(index.answers), "",
    ])
