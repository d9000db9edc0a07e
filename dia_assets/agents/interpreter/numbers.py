"""Non-finite numbers (NaN, Infinity, values beyond the DOUBLE range) in numeric columns.

A database column cannot hold them as the same value (DECIMAL has no NaN; an overflowing
literal reads as Infinity), so each one is flagged instead of becoming a silent NULL or inf."""

from __future__ import annotations

import duckdb

from dia_assets.contracts.interpretation import QualityIssue, Source
from dia_assets.platform.naming import quote_ident

NON_FINITE_WORDS = ("nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity")
NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "DECIMAL", "DOUBLE", "FLOAT", "REAL")
CHUNK = 64


def _non_finite_sql(col: str, physical: str) -> str:
    if physical.upper() in ("DOUBLE", "FLOAT", "REAL"):
        return f"count(*) FILTER (isnan({col}) OR isinf({col}))"
    return non_finite_text_sql(col)


def non_finite_text_sql(
    col: str, weight: str | None = None, trimmed: bool = False, lowered: str | None = None,
    parsed_double: str | None = None,
) -> str:
    """Count of NaN/Infinity words and values beyond the DOUBLE range in text column `col`
    (the profiler adds it to its full-table pass for columns that may end numeric; with
    `weight`, each row stands for that many; `trimmed`: `col` is trimmed already; `lowered`:
    an expression already holding the lower-cased trimmed text wherever it could be a word;
    `parsed_double`: an expression already holding the text's DOUBLE parse wherever it could
    be infinite and not a word)."""
    words = ", ".join(f"'{w}'" for w in NON_FINITE_WORDS)
    t = col if trimmed else f"trim({col})"
    cond = f"{lowered or f'lower({t})'} IN ({words}) OR isinf({parsed_double or f'TRY_CAST({t} AS DOUBLE)'})"
    return f"count(*) FILTER ({cond})" if weight is None else f"coalesce(sum({weight}) FILTER ({cond}), 0)"


def non_finite_issues(
    con: duckdb.DuckDBPyConnection, source: Source, table: str, counted: dict[str, int] | None = None,
) -> list[QualityIssue]:
    """One issue per numeric column holding NaN or infinite values, counted over the full table
    (`counted`: counts the profiler already made, by column)."""
    counted = counted or {}
    checked = [
        c for c in source.columns
        if c.inferred_type.upper().startswith(NUMERIC)
        and (c.physical_type.upper() == "VARCHAR" or c.physical_type.upper() in ("DOUBLE", "FLOAT", "REAL"))
    ]
    found = {c.name: counted[c.name] for c in checked if c.name in counted}
    todo = [c for c in checked if c.name not in counted]
    for start in range(0, len(todo), CHUNK):
        chunk = todo[start:start + CHUNK]
        counts = con.execute(
            "SELECT " + ", ".join(_non_finite_sql(quote_ident(c.name), c.physical_type) for c in chunk)
            + f" FROM {quote_ident(table)}"
        ).fetchall()[0]
        found.update(zip([c.name for c in chunk], counts, strict=True))
    issues = []
    for col in checked:
        count = found[col.name]
        if count:
            issues.append(QualityIssue(
                source=source.name, column=col.name, kind="non_finite_numbers", severity="warning",
                count=int(count),
                message=f"{source.path}: {count} value(s) in {col.name} are NaN, Infinity or beyond the "
                f"range of a DOUBLE; {col.inferred_type} cannot hold them as written",
                suggested_action="Keep the column as text, or treat these values as missing "
                "(NaN is a null token; infinite values go to the reject table).",
            ))
    return issues
