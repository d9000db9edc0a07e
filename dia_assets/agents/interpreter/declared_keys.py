"""Declared keys (from a schema file beside the data) win over inferred ones, marked `source: declared`.

A declared foreign key is still measured on the data: coverage and orphans are findings, not hidden.
"""

from __future__ import annotations

from collections.abc import Mapping

import duckdb

from dia_assets.agents.interpreter import partitions
from dia_assets.contracts.interpretation import (
    ForeignKey,
    Interpretation,
    KeyCandidate,
    QualityIssue,
    Source,
    SourceRef,
)
from dia_assets.platform.files.declared import bare_name
from dia_assets.platform.naming import quote_ident, snake_case


def apply_declared(
    interpretation: Interpretation, con: duckdb.DuckDBPyConnection | None = None,
    tables: Mapping[str, str] | None = None,
) -> None:
    """Declared primary and foreign keys win over inferred ones. Runs after key inference.

    With a connection and each source's loaded table, a declared foreign key's coverage and
    orphans are measured (a declared key the data contradicts is a finding, not hidden)."""
    by_table: dict[str, Source] = {}
    for src in interpretation.sources:
        if src.declared:
            by_table[src.declared.table.lower()] = src
            by_table.setdefault(bare_name(src.declared.table).lower(), src)
    for src in interpretation.sources:
        declared = src.declared
        if declared is None:
            continue
        pk = _map_columns(src, declared.primary_key)
        if declared.primary_key and not pk:
            _unused(interpretation, src, f"declared primary key {declared.primary_key} names no column of it")
        if pk:
            src.primary_key = KeyCandidate(
                columns=pk, confidence=1.0, source="declared",
                reason=f"primary key declared in {declared.schema_file}",
            )
            src.candidate_keys = [src.primary_key, *(k for k in src.candidate_keys if k.columns != pk)]
            _check_unique(interpretation, con, (tables or {}).get(src.name), src, pk)
            part = src.range_partition
            if part:  # the schema file's key settles the observation: dropped, or said as declared
                interpretation.quality_issues = [i for i in interpretation.quality_issues
                                                 if not (i.source == src.name and i.kind == "range_partitioned")]
                if pk == [part.column, *part.unique_key]:
                    interpretation.quality_issues.append(partitions.issue(src))
                else:
                    src.range_partition = None
        for fk in declared.foreign_keys:
            parent = by_table.get(fk.ref_source.lower()) or by_table.get(bare_name(fk.ref_source).lower())
            columns = _map_columns(src, fk.columns)
            ref = _map_columns(parent, fk.ref_columns or (parent.declared.primary_key if parent.declared else [])
                               ) if parent else []
            if parent is None or not columns or not ref or len(ref) != len(columns):
                why = "no data file holds it" if parent is None else "its columns are not in the data"
                _unused(interpretation, src, f"declared foreign key {fk.columns} -> {fk.ref_source} not used: {why}")
                continue
            same = [f for f in interpretation.foreign_keys
                    if f.from_.source == src.name and f.from_.columns == columns]
            measured = next((f for f in same if f.to.source == parent.name and f.to.columns == ref), None)
            interpretation.foreign_keys = [f for f in interpretation.foreign_keys if f not in same]
            coverage, orphans, examples = (
                (measured.coverage, measured.orphan_count, measured.orphan_examples) if measured
                else _measure(con, tables or {}, src.name, columns, parent.name, ref)
            )
            interpretation.foreign_keys.append(ForeignKey(
                from_=SourceRef(source=src.name, columns=columns),
                to=SourceRef(source=parent.name, columns=ref),
                coverage=coverage, orphan_count=orphans, orphan_examples=examples,
                confidence=1.0, source="declared",
                evidence=[f"declared in {declared.schema_file}"],
            ))


def _check_unique(
    interpretation: Interpretation, con: duckdb.DuckDBPyConnection | None, table: str | None,
    src: Source, pk: list[str],
) -> None:
    """A declared primary key the data contradicts (duplicate or missing values) is a finding."""
    if con is None or table is None:
        return
    cols = ", ".join(quote_ident(c) for c in pk)
    missing = " OR ".join(f"{quote_ident(c)} IS NULL OR trim({quote_ident(c)}) = ''" for c in pk)
    dupes, nulls = con.execute(
        f"SELECT (SELECT count(*) FROM (SELECT {cols} FROM {quote_ident(table)} GROUP BY ALL HAVING count(*) > 1)), "
        f"(SELECT count(*) FROM {quote_ident(table)} WHERE {missing})"
    ).fetchone()
    if dupes or nulls:
        interpretation.quality_issues.append(QualityIssue(
            source=src.name, kind="declared_key_violated", severity="warning", count=dupes + nulls,
            message=f"{src.path}: primary key {pk} declared in {src.declared.schema_file} has "
                    f"{dupes} duplicated and {nulls} missing value(s)",
            suggested_action="Check the export; the declared key cannot be enforced as is.",
        ))


def _unused(interpretation: Interpretation, src: Source, message: str) -> None:
    schema_file = src.declared.schema_file if src.declared else "schema file"
    interpretation.quality_issues.append(QualityIssue(
        source=src.name, kind="declared_key_unused", severity="info",
        message=f"{schema_file}: {message} ({src.path})",
        suggested_action="Check the schema file against the data files, or add the missing file.",
    ))


def _measure(
    con: duckdb.DuckDBPyConnection | None, tables: Mapping[str, str], child: str, columns: list[str],
    parent: str, ref: list[str],
) -> tuple[float, int, list[str]]:
    """Coverage of distinct child values, orphan rows and a few orphan values (text compared trimmed)."""
    if con is None or child not in tables or parent not in tables:
        return 1.0, 0, []
    c = [f"trim(c.{quote_ident(x)})" for x in columns]
    p = [f"trim(p.{quote_ident(x)})" for x in ref]
    on = " AND ".join(f"{a} = {b}" for a, b in zip(c, p, strict=True))
    present = " AND ".join(f"{a} IS NOT NULL AND {a} <> ''" for a in c)
    keys = ", ".join(f"{a} AS k{i}" for i, a in enumerate(c))
    distinct, orphan_distinct, orphans, examples = con.execute(
        f"WITH v AS (SELECT {keys}, NOT EXISTS (SELECT 1 FROM {quote_ident(tables[parent])} p "
        f"WHERE {on}) AS orphan FROM {quote_ident(tables[child])} c WHERE {present}) "
        "SELECT (SELECT count(*) FROM (SELECT DISTINCT * FROM v)), "
        "(SELECT count(*) FROM (SELECT DISTINCT * FROM v WHERE orphan)), "
        "(SELECT count(*) FROM v WHERE orphan), "
        "(SELECT list(DISTINCT k0 ORDER BY k0)[1:5] FROM v WHERE orphan)"
    ).fetchone()
    coverage = 1.0 if not distinct else 1 - orphan_distinct / distinct
    return coverage, orphans, [str(e) for e in (examples or [])]


def _map_columns(src: Source, names: list[str]) -> list[str]:
    """Declared column names -> the source's column names; empty if any is missing."""
    by_key = {}
    for col in src.columns:
        by_key.setdefault(col.original_name.lower(), col.name)
        by_key.setdefault(col.name.lower(), col.name)
    out = [by_key.get(n.lower()) or by_key.get(snake_case(n)) for n in names]
    return [c for c in out if c] if all(out) else []
