"""Data-quality issues that need a decision, each with evidence and a suggested action."""

from __future__ import annotations

import duckdb

from dia_assets.agents.interpreter.numbers import non_finite_issues
from dia_assets.agents.interpreter.partitions import issue as partition_issue
from dia_assets.agents.interpreter.profile import SourceProfile
from dia_assets.agents.value_parsing import present
from dia_assets.contracts.interpretation import ForeignKey, QualityIssue, Source
from dia_assets.contracts.policy import HIGH
from dia_assets.platform.naming import quote_ident, sql_str

# The kinds `column_issues` reports: issues about a source's rows as profiled, which a new
# profile of the same rows (a union of files, `one_table.py`) replaces.
PROFILE_KINDS = frozenset({
    "duplicate_rows", "unparseable_values", "blank_strings", "null_tokens", "mixed_formats", "numbers_as_text",
    "huge_field", "inconsistent_categories", "outliers", "non_finite_numbers",
})


def column_issues(
    con: duckdb.DuckDBPyConnection, source: Source, table: str, profile: SourceProfile
) -> list[QualityIssue]:
    issues: list[QualityIssue] = []
    add = issues.append
    name = source.name
    if source.duplicate_rows:
        add(QualityIssue(
            source=name, kind="duplicate_rows", count=source.duplicate_rows,
            message=f"{source.duplicate_rows} row(s) are exact copies of another row",
            suggested_action="Deduplicate in the refined table; staging keeps every copy.",
        ))
    for col in source.columns:
        if col.unparseable_count and col.inferred_type != "VARCHAR":
            add(QualityIssue(
                source=name, column=col.name, kind="unparseable_values", count=col.unparseable_count,
                examples=col.unparseable_examples,
                message=f"{col.unparseable_count} value(s) in {col.name} do not parse as {col.inferred_type}",
                suggested_action="Route these rows to the reject table, or fix the values in the source.",
            ))
        if col.blank_count:
            add(QualityIssue(
                source=name, column=col.name, kind="blank_strings", severity="info", count=col.blank_count,
                message=f"{col.blank_count} empty or whitespace-only string(s) in {col.name}",
                suggested_action="Treat blank strings as NULL if they mean 'missing'.",
            ))
        if col.null_token_count:
            add(QualityIssue(
                source=name, column=col.name, kind="null_tokens", severity="info", count=col.null_token_count,
                examples=col.value_format.null_tokens,
                message=f"{col.null_token_count} null-like token(s) {col.value_format.null_tokens} in {col.name}",
                suggested_action="Map these tokens to NULL.",
            ))
        if len(col.value_format.date_formats) > 1:
            counts = _format_counts(con, table, col.name, col.value_format.date_formats)
            minority = sum(counts[1:])
            add(QualityIssue(
                source=name, column=col.name, kind="mixed_formats", count=minority,
                examples=[f"{f}: {n}" for f, n in zip(col.value_format.date_formats, counts, strict=True)],
                message=f"{col.name} mixes {len(counts)} date formats; {minority} value(s) are not in the "
                f"dominant format {col.value_format.date_formats[0]}",
                suggested_action="Unify to ISO dates while loading (formats are tried in order).",
            ))
        fmt = col.value_format
        if col.physical_type == "VARCHAR" and (fmt.currency_symbols or fmt.percent or fmt.decimal_separator != "."
                                               or fmt.thousands_separator):
            what = ("currency amounts" if fmt.currency_symbols else "percentages" if fmt.percent
                    else "decimal-comma numbers" if fmt.decimal_separator != "." else "numbers with thousands separators")
            add(QualityIssue(
                source=name, column=col.name, kind="numbers_as_text", severity="info",
                count=source.row_count - col.null_count - col.blank_count - col.null_token_count,
                examples=col.examples[:3],
                message=f"{col.name} holds {what} stored as text",
                suggested_action=f"Parse to {col.inferred_type} while loading.",
            ))
        if col.name in profile.huge_fields:
            add(QualityIssue(
                source=name, column=col.name, kind="huge_field", count=profile.huge_fields[col.name],
                message=f"{profile.huge_fields[col.name]} value(s) in {col.name} exceed 1 MB (longest {col.max_length} characters)",
                suggested_action="Keep as text or move to object storage; exclude from the refined table if unused.",
            ))
    for col_name, groups in profile.variants.items():
        variants = sum(sum(n for _, n in spellings) - max(n for _, n in spellings) for _, spellings in groups)
        examples = [" | ".join(f"{s!r}×{n}" for s, n in spellings) for _, spellings in groups[:5]]
        add(QualityIssue(
            source=name, column=col_name, kind="inconsistent_categories", count=variants,
            examples=examples,
            message=f"{col_name} spells {len(groups)} categor{'y' if len(groups) == 1 else 'ies'} in several ways "
            "(case or whitespace)",
            suggested_action="Map each variant to its most frequent spelling (category mapping in the overrides).",
        ))
    for col_name, (count, examples) in profile.outliers.items():
        add(QualityIssue(
            source=name, column=col_name, kind="outliers", severity="info", count=count, examples=examples,
            message=f"{count} value(s) in {col_name} lie beyond 3 interquartile ranges",
            suggested_action="Check they are real; keep them unless the expert says otherwise.",
        ))
    issues.extend(non_finite_issues(con, source, table, profile.non_finite))
    return issues


def _format_counts(con: duckdb.DuckDBPyConnection, table: str, column: str, formats: list[str]) -> list[int]:
    """Values per format, each counted by the first format that reads it."""
    value = present(quote_ident(column))
    cases = " ".join(
        f"WHEN try_strptime({value}, {sql_str(f)}) IS NOT NULL THEN {i}" for i, f in enumerate(formats)
    )
    rows = dict(con.execute(
        f"SELECT CASE {cases} END __k, count(*) FROM {quote_ident(table)} WHERE {value} IS NOT NULL GROUP BY __k"
    ).fetchall())
    return [rows.get(i, 0) for i in range(len(formats))]


def key_issues(source: Source) -> list[QualityIssue]:
    partitioned = partition_issue(source)
    if partitioned:
        return [partitioned]
    pk = source.primary_key
    if pk is not None and "conflicting duplicate" in pk.reason:
        count = source.row_count - source.duplicate_rows - source.column(pk.columns[0]).distinct_count
        return [QualityIssue(
            source=source.name, column=pk.columns[0], kind="duplicate_keys", count=count,
            examples=[pk.reason.split("e.g. ", 1)[-1]],
            message=f"{count} row(s) share a {pk.columns[0]} with a different row",
            suggested_action="Decide which version wins (dedupe on the key) or reject the conflicting rows.",
        )]
    if pk is None and source.row_count and source.columns:
        return [QualityIssue(
            source=source.name, kind="no_primary_key", severity="warning",
            message=f"no column or combination of up to 3 columns identifies {source.name}'s rows",
            suggested_action="Declare a key in the overrides, or load without one.",
        )]
    return []


def fk_issues(fks: list[ForeignKey]) -> list[QualityIssue]:
    return [
        QualityIssue(
            source=fk.from_.source, column=", ".join(fk.from_.columns), kind="orphan_foreign_keys",
            count=fk.orphan_count, examples=fk.orphan_examples,
            message=f"{fk.orphan_count} row(s) of {fk.from_.source}.{'/'.join(fk.from_.columns)} have no match in "
            f"{fk.to.source}.{'/'.join(fk.to.columns)}",
            suggested_action="Allow them with a reason in the overrides, or route them to the reject table.",
        )
        for fk in fks
        if fk.orphan_count and fk.confidence >= HIGH
    ]
