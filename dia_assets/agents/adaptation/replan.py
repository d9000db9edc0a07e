"""Which saved answers a change touches: the answers whose recorded reads include an affected
table (any column, for a table-wide change) or an affected column of it."""

from __future__ import annotations

from pathlib import Path

import sqlglot
from sqlglot import exp

from dia_assets.contracts.query_result import QueryResult
from dia_assets.platform.workspace import Workspace

Reads = dict[str, list[str]]  # table -> columns read (QueryResult.reads, platform/sql/reads.py)


def touched(sql: str, dialect: str = "duckdb") -> tuple[set[str], set[tuple[str | None, str]]]:
    """Tables and (table alias or None, column) pairs a query names, without a schema: the
    fallback for an answer saved without its reads (a CTE named like a table counts as that
    table, and every column name counts for every table)."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.ParseError:
        return set(), set()
    tables = {t.name.lower() for t in tree.find_all(exp.Table)}
    columns = {(c.table.lower() or None, c.name.lower()) for c in tree.find_all(exp.Column)}
    return tables, columns


def named_reads(sql: str, dialect: str = "duckdb") -> Reads:
    """`touched` as reads: every column name the SQL names, on every table it names."""
    tables, columns = touched(sql, dialect)
    names = sorted({name for _, name in columns})
    return {t: names for t in sorted(tables)}


def saved_reads(workspace: Path) -> dict[str, Reads]:
    """question id -> what its last answer read. The reads the query agent stored in
    result.json (sqlglot scopes over the warehouse schema: CTEs, aliases and SELECT * resolved);
    for an answer saved without them (query.sql alone, an older DIA, SQL that did not run) the
    names in its SQL (`named_reads`, in the answer's dialect when result.json says it)."""
    ws = Workspace(workspace)
    out: dict[str, Reads] = {}
    for sql_path in sorted(ws.queries_dir.glob("*/query.sql")):
        qid, result = sql_path.parent.name, None
        result_path = ws.query(qid).result
        if result_path.exists():
            try:
                result = QueryResult.read(result_path)
            except (ValueError, OSError):
                result = None  # unreadable: fall back to the SQL
        if result is not None and result.reads:
            out[qid] = {t.lower(): [c.lower() for c in cols] for t, cols in result.reads.items()}
        else:
            out[qid] = named_reads(sql_path.read_text(encoding="utf-8"), result.dialect if result else "duckdb")
    return out


def reads_affected(reads: Reads, affected: dict[str, set[str] | None]) -> bool:
    """Whether an answer that read `reads` reads an affected table (None: any column) or column."""
    for table, cols in affected.items():
        read = reads.get(table.lower())
        if read is None:
            continue
        if cols is None or {c.lower() for c in cols} & set(read):
            return True
    return False


def replan_partitions(answers: dict[str, Reads], affected: dict[str, set[str] | None]) -> list[str]:
    """Question ids (sorted) whose answer reads what the change affected."""
    return [qid for qid, reads in sorted(answers.items()) if reads_affected(reads, affected)]


def affected_partitions(
    queries: dict[str, str], affected: dict[str, set[str] | None], dialect: str = "duckdb"
) -> list[str]:
    """Partitions whose SQL names an affected table (None: any column) or an affected column
    (SQL without recorded reads: `named_reads`)."""
    return replan_partitions({qid: named_reads(sql, dialect) for qid, sql in queries.items()}, affected)
