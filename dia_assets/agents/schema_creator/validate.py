"""Validation on four axes (row counts, column coverage, key validity, load integrity)
plus generated test queries. Every number is measured on the built warehouse."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from dia_assets.agents.schema_creator import sqlgen
from dia_assets.agents.value_parsing import value_sql
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.contracts.manifest import (
    Manifest,
    ManifestColumn,
    ManifestForeignKey,
    ManifestTable,
)
from dia_assets.contracts.report import (
    AxisResult,
    ColumnCoverage,
    FileRowCounts,
    KeyResult,
    TableRejects,
    TableRowCounts,
    TestQuery,
    ValidationReport,
)
from dia_assets.platform.naming import quote_ident as q
from dia_assets.platform.naming import sql_str
from dia_assets.platform.tables.target import Target

AXES = ["row_count_reconciliation", "column_coverage", "key_validity", "load_integrity", "test_queries"]


def _n(target: Target, sql: str) -> int:
    return int(target.scalar(sql) or 0)


@dataclass(frozen=True)
class LayerCounts:
    """A table's rows in its three layers, read in one statement: row-count reconciliation,
    load integrity and the test queries all read them (a statement is a job on Spark, where the
    14 tables of Northwind took 200 of them one count at a time)."""

    staged: int
    refined: int
    rejects: int  # every reject row
    rejected: int  # staged rows refused (not kept with a NULLed value)
    unparsed: int  # lines the reader could not split
    kept: int  # rows kept with a value NULLed
    blind: int  # rejects without reason or provenance
    duplicates: int  # exact duplicates removed (tables deduplicated by exact rows)


BLIND = "_reason IS NULL OR _reason = '' OR _source_file IS NULL OR _source_row IS NULL"


def _flag_sum(cond: str) -> str:
    return f"coalesce(sum(CASE WHEN {cond} THEN 1 ELSE 0 END), 0)"


def layer_counts_sql(table: ManifestTable) -> str:
    stg, rej = f"staging.{q(table.name)}", f"rejects.{q(table.name)}"
    distinct = "count(DISTINCT _content_hash)" if table.dedup == "exact_rows" else "count(*)"
    return (f"SELECT s.staged, s.firsts, r.refined, j.rejects, j.rejected, j.unparsed, j.kept, j.blind FROM "
            f"(SELECT count(*) AS staged, {distinct} AS firsts FROM {stg}) s, "
            f"(SELECT count(*) AS refined FROM {q(table.name)}) r, "
            f"(SELECT count(*) AS rejects, {_flag_sum('_raw_line IS NULL AND NOT _row_kept')} AS rejected, "
            f"{_flag_sum('_raw_line IS NOT NULL')} AS unparsed, {_flag_sum('_row_kept')} AS kept, "
            f"{_flag_sum(BLIND)} AS blind "
            f"FROM {rej}) j")


def _layer_counts(row: tuple) -> LayerCounts:
    staged, firsts, refined, rejects, rejected, unparsed, kept, blind = (int(v or 0) for v in row)
    return LayerCounts(staged=staged, refined=refined, rejects=rejects, rejected=rejected, unparsed=unparsed,
                       kept=kept, blind=blind, duplicates=staged - firsts)


def layer_counts(target: Target, table: ManifestTable) -> LayerCounts:
    return _layer_counts(target.rows(layer_counts_sql(table))[0])


def all_layer_counts(target: Target, manifest: Manifest) -> dict[str, LayerCounts]:
    rows = one_rows(target, [layer_counts_sql(table) for table in manifest.tables])
    return {table.name: _layer_counts(row) for table, row in zip(manifest.tables, rows, strict=True)}


BATCH = 10  # queries per statement


def one_rows(target: Target, sqls: list[str]) -> list[tuple]:
    """The one row each query returns, BATCH queries to a statement (UNION ALL, each row tagged
    with its query's place): on Spark each statement is a job of its own (a Spark build of
    Northwind ran 89 statements one check at a time, 27 batched). The queries of a batch must
    return the same columns."""
    out: list[tuple] = []
    for at in range(0, len(sqls), BATCH):
        batch = sqls[at:at + BATCH]
        union = " UNION ALL ".join(f"SELECT {i} AS _q, b{i}.* FROM ({sql}) b{i}" for i, sql in enumerate(batch))
        rows = {int(r[0]): tuple(r[1:]) for r in target.rows(union)}
        out += [rows[i] for i in range(len(batch))]
    return out


def scalar_values(target: Target, sqls: list[str]) -> list[int | Exception]:
    """Each scalar query's value, BATCH to a statement (scalar subqueries of one SELECT). A batch
    that fails runs again one query at a time, so an error is the failing query's own: it is
    returned in that query's place."""
    out: list[int | Exception] = []
    for at in range(0, len(sqls), BATCH):
        batch = sqls[at:at + BATCH]
        try:
            values = target.rows("SELECT " + ", ".join(f"({sql}) AS q{i}" for i, sql in enumerate(batch)))[0]
            out += [int(v or 0) for v in values]
        except Exception:  # any driver error: find which query it was
            _rollback(target)
            for sql in batch:
                try:
                    out.append(_n(target, sql))
                except Exception as exc:  # noqa: PERF203 - the error is the query's result
                    out.append(exc)
                    _rollback(target)
    return out


def scalars(target: Target, sqls: list[str]) -> list[int]:
    """`scalar_values`, raising the first query's error."""
    values = scalar_values(target, sqls)
    for value in values:
        if isinstance(value, Exception):
            raise value
    return values  # type: ignore[return-value]


def check_row_counts(target: Target, manifest: Manifest,
                     counts: dict[str, LayerCounts] | None = None) -> list[TableRowCounts]:
    counts = counts or all_layer_counts(target, manifest)
    out = []
    for table in manifest.tables:
        c = counts[table.name]
        staged, refined, rejected, unparsed, dups = c.staged, c.refined, c.rejected, c.unparsed, c.duplicates
        entry = TableRowCounts(
            table=table.name, source_rows=staged + unparsed, interpreted_rows=table.source_rows + table.bad_rows,
            staged=staged, refined=refined, rejected=rejected, unparsed_lines=unparsed, duplicates_removed=dups,
        )
        problems = []
        if entry.source_rows != entry.interpreted_rows:
            problems.append(f"file has {entry.source_rows} records, the interpretation counted "
                            f"{entry.interpreted_rows}: the file changed since interpretation")
        if table.source_records is not None and staged + unparsed != table.source_records:
            problems.append(lost_message(table.files_label(), table.source_records, staged, unparsed))
        if table.source_files:
            entry.files = file_row_counts(target, table)
            problems += [f.message for f in entry.files if not f.passed]
        if staged != refined + rejected + dups:
            problems.append(f"staged {staged} != refined {refined} + rejected {rejected} + duplicates {dups}: "
                            f"{staged - refined - rejected - dups} rows unaccounted for")
        entry.passed = not problems
        entry.message = "; ".join(problems) or (
            f"{entry.source_rows} = {refined} refined + {rejected} rejected + {dups} duplicates"
            + (f" + {unparsed} unparseable lines" if unparsed else ""))
        out.append(entry)
    out.extend(unread_source_counts(manifest))
    return out


def lost_message(file: str, records: int, staged: int, unparsed: int) -> str:
    """records_lost: the file's records (counted from its bytes) against what reached the warehouse."""
    return (f"records_lost: {file} has {records} records, but {staged} rows were loaded + {unparsed} lines "
            f"rejected = {staged + unparsed}: {records - staged - unparsed} record(s) unaccounted for")


def file_row_counts(target: Target, table: ManifestTable) -> list[FileRowCounts]:
    """Each file's records of a table loaded from several files, reconciled on their own."""
    stg, rej = f"staging.{q(table.name)}", f"rejects.{q(table.name)}"
    staged = {f: (int(n), int(d or 0)) for f, n, d in target.rows(
        f"SELECT _source_file, count(*), sum(CASE WHEN _dup > 1 THEN 1 ELSE 0 END) FROM "
        f"(SELECT _source_file, {sqlgen.dup_sql(table)} AS _dup FROM {stg}) s GROUP BY _source_file")}
    rejected = {f: (int(r or 0), int(u or 0)) for f, r, u in target.rows(
        f"SELECT _source_file, sum(CASE WHEN _raw_line IS NULL AND NOT _row_kept THEN 1 ELSE 0 END), "
        f"sum(CASE WHEN _raw_line IS NOT NULL THEN 1 ELSE 0 END) FROM {rej} GROUP BY _source_file")}
    out = []
    for file in table.source_files:
        (n, dups), (bad, unparsed) = staged.get(file.ref, (0, 0)), rejected.get(file.ref, (0, 0))
        entry = FileRowCounts(file=file.ref, interpreted_rows=file.rows + file.bad_rows, staged=n,
                              unparsed_lines=unparsed, rejected=bad, duplicates_removed=dups, refined=n - bad - dups)
        entry.passed = n + unparsed == entry.interpreted_rows
        if entry.passed and file.records is not None and n + unparsed != file.records:
            entry.passed = False
            entry.message = lost_message(file.ref, file.records, n, unparsed)
            out.append(entry)
            continue
        entry.message = (f"{file.ref}: {n + unparsed} = {entry.refined} refined + {bad} rejected + {dups} duplicates"
                         + (f" + {unparsed} unparseable lines" if unparsed else "") if entry.passed else
                         f"{file.ref} has {n + unparsed} records, the interpretation counted "
                         f"{entry.interpreted_rows}: the file changed since interpretation")
        out.append(entry)
    return out


def raw_lines(path: Path) -> int:
    """Non-blank lines in a file, counted from its bytes: no reader involved, so a file
    that no reader could open still shows what it holds."""
    count, content = 0, False
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            parts = block.split(b"\n")
            for index, part in enumerate(parts):
                content = content or bool(part.strip())
                if index < len(parts) - 1:  # a newline ends the line
                    count, content = count + content, False
    return count + content


def unread_source_counts(manifest: Manifest) -> list[TableRowCounts]:
    """A file that could not be read fails the row counts unless it holds nothing."""
    out = []
    for src in manifest.unreadable_sources:
        path = Path(manifest.data_dir) / src.source_path
        lines = raw_lines(path) if path.is_file() else 0
        entry = TableRowCounts(table=src.name, source_rows=lines, interpreted_rows=0, staged=0, refined=0,
                               rejected=0, passed=lines == 0)
        entry.message = (f"{src.source_path}: empty, nothing to load ({src.reason})" if entry.passed else
                         f"{src.source_path} could not be loaded ({src.reason}): its {lines} non-blank line(s) are "
                         "in no table and no reject table; fix the file, or exclude it in the overrides")
        out.append(entry)
    return out


def check_column_coverage(target: Target, manifest: Manifest) -> list[ColumnCoverage]:
    out = []
    for table in manifest.tables:
        staged = {c for c, _ in target.columns("staging", table.name)}
        refined = {c for c, _ in target.columns(target.default_schema, table.name)}
        by_source = {c.source_column: c for c in table.columns}
        excluded = {e.source_column: e.reason for e in table.excluded_columns}
        entry = ColumnCoverage(table=table.name)
        for src in table.source_columns:
            col = by_source.get(src)
            if src not in staged:
                entry.missing.append(f"{src} (not in staging)")
            elif src in excluded and excluded[src].strip():
                entry.excluded[src] = excluded[src]
            elif col is None or col.name not in refined:
                entry.missing.append(src)
            elif col.name != src:
                entry.renamed[src] = col.name
            else:
                entry.carried.append(src)
        entry.passed = not entry.missing
        out.append(entry)
    return out


def _key_examples(target: Target, sql: str) -> list[str]:
    return [" | ".join("NULL" if v is None else str(v) for v in row) for row in target.rows(sql)]


def declared_primary_key(target: Target, table: ManifestTable) -> bool:
    """Whether DuckDB itself enforces exactly this primary key on the refined table: then
    it holds by construction (the loader declares a key only after the rows satisfied it)."""
    if not target.engine.loads_natively or not table.primary_key:
        return False
    rows = target.rows(
        "SELECT constraint_column_names FROM duckdb_constraints() WHERE constraint_type = 'PRIMARY KEY' "
        f"AND schema_name = 'main' AND table_name = {sql_str(table.name)}")
    return any(list(r[0]) == list(table.primary_key) for r in rows)


def _duplicate_keys_sql(table: ManifestTable) -> str:
    keys = ", ".join(q(c) for c in table.primary_key)
    return f"SELECT {keys}, count(*) AS n FROM {q(table.name)} GROUP BY {keys} HAVING count(*) > 1"


def primary_key_counts(table: ManifestTable) -> list[str]:
    """Scalar queries: the key's duplicated values, then its rows with a NULL."""
    nulls = " OR ".join(f"{q(c)} IS NULL" for c in table.primary_key)
    return [f"SELECT count(*) FROM ({_duplicate_keys_sql(table)}) d",
            f"SELECT count(*) FROM {q(table.name)} WHERE {nulls}"]


def primary_key_result(target: Target, table: ManifestTable, counts: list[int] | None = None) -> KeyResult:
    """`counts`: the values of `primary_key_counts`, read already (in a batch) for a key DuckDB
    does not enforce; None: find out here."""
    result = KeyResult(table=table.name, kind="primary_key", columns=table.primary_key)
    if counts is None:
        if declared_primary_key(target, table):  # no duplicate and no NULL can be in the table
            result.passed = True
            return result
        counts = scalars(target, primary_key_counts(table))
    result.duplicate_keys, result.null_keys = counts
    if result.duplicate_keys:
        keys = ", ".join(q(c) for c in table.primary_key)
        result.examples = _key_examples(
            target, f"SELECT {keys} FROM ({_duplicate_keys_sql(table)}) d ORDER BY {keys} LIMIT 10")
    result.passed = not (result.duplicate_keys or result.null_keys)
    return result


def _orphan_sql(table: ManifestTable, fk: ManifestForeignKey, select: str) -> str:
    cond = " AND ".join(f"p.{q(pc)} = c.{q(cc)}" for cc, pc in zip(fk.columns, fk.ref_columns, strict=True))
    present = " AND ".join(f"c.{q(cc)} IS NOT NULL" for cc in fk.columns)
    return (f"SELECT {select} FROM {q(table.name)} c WHERE {present} AND NOT EXISTS "
            f"(SELECT 1 FROM {q(fk.ref_table)} p WHERE {cond})")


def foreign_key_result(target: Target, table: ManifestTable, fk: ManifestForeignKey,
                       orphans: int | None = None) -> KeyResult:
    """`orphans`: the orphan count, when read already (in a batch)."""
    result = KeyResult(
        table=table.name, kind="foreign_key", columns=fk.columns, ref_table=fk.ref_table,
        ref_columns=fk.ref_columns, allowed=fk.allow_orphans, reason=fk.orphan_reason,
        blocking=fk.blocking,
    )
    result.orphan_rows = _n(target, _orphan_sql(table, fk, "count(*)")) if orphans is None else orphans
    if result.orphan_rows:
        cols = ", ".join(f"c.{q(c)}" for c in fk.columns)
        result.examples = _key_examples(
            target, f"SELECT DISTINCT {', '.join(q(c) for c in fk.columns)} FROM "
            f"({_orphan_sql(table, fk, cols)}) o ORDER BY 1 LIMIT 10")
    result.passed = result.orphan_rows == 0 or (fk.allow_orphans and bool((fk.orphan_reason or "").strip()))
    return result


def slice_join_result(target: Target, table: ManifestTable, part: str) -> KeyResult:
    """slice_join: a part of a split wide table joins its first part 1:1 on the key: every key
    on both sides (orphan_rows: keys on one side only) and the join as long as each side
    (duplicate_keys: rows the join adds)."""
    on = " AND ".join(f"a.{q(c)} = b.{q(c)}" for c in table.primary_key)
    first = table.primary_key[0]
    result = KeyResult(table=part, kind="slice_join", columns=table.primary_key, ref_table=table.name,
                       ref_columns=table.primary_key)
    result.orphan_rows = _n(target, f"SELECT count(*) FROM {q(table.name)} a FULL JOIN {q(part)} b ON {on} "
                                    f"WHERE a.{q(first)} IS NULL OR b.{q(first)} IS NULL")
    joined = _n(target, f"SELECT count(*) FROM {q(table.name)} a JOIN {q(part)} b ON {on}")
    rows = max(_n(target, f"SELECT count(*) FROM {q(table.name)}"), _n(target, f"SELECT count(*) FROM {q(part)}"))
    result.duplicate_keys = max(0, joined - rows)
    result.passed = not result.orphan_rows and not result.duplicate_keys and joined == rows
    if not result.passed:
        result.examples = [f"{part} does not join {table.name} 1:1 on ({', '.join(table.primary_key)}): "
                         f"{result.orphan_rows} key(s) on one side only, {joined} joined rows for {rows}"]
    return result


def check_keys(target: Target, manifest: Manifest) -> list[KeyResult]:
    """Every key's counts read first, in batches; then each key judged (examples read only for
    a key that fails)."""
    checked = [t for t in manifest.tables if t.primary_key and not declared_primary_key(target, t)]
    sqls = [sql for t in checked for sql in primary_key_counts(t)]
    sqls += [_orphan_sql(t, fk, "count(*)") for t in manifest.tables for fk in t.foreign_keys]
    values = iter(scalars(target, sqls))
    pk_counts = {t.name: [next(values), next(values)] for t in checked}
    out = []
    for table in manifest.tables:
        if table.primary_key:  # a key DuckDB enforces has no duplicate and no NULL: counts of 0
            out.append(primary_key_result(target, table, pk_counts.get(table.name, [0, 0])))
        for fk in table.foreign_keys:
            out.append(foreign_key_result(target, table, fk, next(values)))
        out.extend(slice_join_result(target, table, part) for part in table.parts[1:])
    return out


def check_load_integrity(target: Target, manifest: Manifest,
                         counts: dict[str, LayerCounts] | None = None) -> list[TableRejects]:
    counts = counts or all_layer_counts(target, manifest)
    out = []
    for table in manifest.tables:
        rej = f"rejects.{q(table.name)}"
        c = counts[table.name]
        total, staged_plus, blind, kept = c.rejects, c.staged + c.unparsed, c.blind, c.kept
        reasons, examples = {}, []
        if total:  # the layer counts say the reject table is empty otherwise
            for reason, n in target.rows(
                f"SELECT coalesce(_reason, '(none)'), count(*) FROM {rej} GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 50"
            ):
                reasons[reason] = int(n)
            examples = [f"row {r}: {reason}" for r, reason in target.rows(
                f"SELECT _source_row, _reason FROM {rej} ORDER BY _source_row LIMIT 5")]
        fraction = (total - kept) / staged_plus if staged_plus else 0.0
        entry = TableRejects(
            table=table.name, rejected=total, reject_fraction=round(fraction, 6),
            max_reject_fraction=table.max_reject_fraction, reasons=reasons, examples=examples,
        )
        entry.values_nulled = kept
        problems = list(table.blocking_issues)  # records lost or altered on the way in
        if blind:
            problems.append(f"{blind} rejects without reason or provenance")
        if fraction > table.max_reject_fraction:
            problems.append(f"{total} rejects ({fraction:.1%}) exceed the allowed {table.max_reject_fraction:.1%}")
        entry.passed = not problems
        entry.message = "; ".join(problems) or (f"{total} rejects, all with reason and provenance" if total else "no rejects")
        out.append(entry)
    return out


_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "DECIMAL", "NUMERIC", "DOUBLE", "FLOAT", "REAL")


def _expected_rows(table: ManifestTable) -> str:
    """The staged rows that should be in the refined table, recomputed from staging text and
    rejects alone: first copies of exact duplicates, minus rows rejected without being kept."""
    return (f"(SELECT *, {sqlgen.dup_sql(table)} AS _dup FROM {sqlgen.staging_ref(table)} s WHERE NOT EXISTS (SELECT 1 FROM "
            f"{sqlgen.reject_ref(table)} r WHERE r._source_file = s._source_file "
            f"AND r._source_row = s._source_row AND NOT r._row_kept)) e WHERE _dup = 1")


def _as_text(expr: str) -> str:
    return f"coalesce(CAST({expr} AS VARCHAR), '<null>')"


def fk_count_query(table: ManifestTable, fk: ManifestForeignKey, plain: Collection[str] = ()) -> TestQuery:
    """Rows per foreign-key value: refined counts against counts of the parsed staging text.
    The SQL returns how many values disagree (expected 0). `plain`: see `value_parsing.value_sql`."""
    cols = [next(c for c in table.columns if c.name == name) for name in fk.columns]
    staged = " || '|' || ".join(_as_text(value_sql(c, q(c.source_column), c.name in plain)) for c in cols)
    refined = " || '|' || ".join(_as_text(q(c.name)) for c in cols)
    sql = (f"SELECT count(*) FROM (SELECT {staged} AS v, count(*) AS n FROM {_expected_rows(table)} GROUP BY 1) x "
           f"FULL JOIN (SELECT {refined} AS v, count(*) AS n FROM {q(table.name)} GROUP BY 1) y ON x.v = y.v "
           f"WHERE x.n IS NULL OR y.n IS NULL OR x.n <> y.n")
    return TestQuery(name=f"rows per {table.name}({', '.join(fk.columns)}) from staging", sql=sql, expected=0)


def sum_query(table: ManifestTable, col: ManifestColumn, plain: Collection[str] = ()) -> TestQuery:
    """A numeric column's sum over the refined table against the sum of its parsed staging
    text. The SQL returns 1 when they differ (expected 0)."""
    staged = value_sql(col, q(col.source_column), col.name in plain)
    # doubles summed in another order can differ in the last bits: a relative tolerance
    sql = (f"SELECT CASE WHEN abs(coalesce(x.t, 0) - coalesce(y.t, 0)) <= 1e-9 * (1 + abs(coalesce(x.t, 0))) "
           f"THEN 0 ELSE 1 END FROM "
           f"(SELECT sum(CAST({staged} AS DOUBLE)) AS t FROM {_expected_rows(table)}) x, "
           f"(SELECT sum(CAST({q(col.name)} AS DOUBLE)) AS t FROM {q(table.name)}) y")
    return TestQuery(name=f"sum {table.name}.{col.name} from staging", sql=sql, expected=0)


def row_query(table: ManifestTable, plain: Collection[str] = ()) -> TestQuery:
    """The first staged row, parsed from its text, is in the refined table with every value
    (found by its key; expected 1). The row is picked first, then parsed."""
    parsed = ", ".join(f"{value_sql(c, q(c.source_column), c.name in plain)} AS {q(c.name)}"
                       for c in table.columns)
    same = " AND ".join(f"t.{q(c.name)} IS NOT DISTINCT FROM e.{q(c.name)}" for c in table.columns)
    sql = (f"SELECT count(*) FROM {q(table.name)} t JOIN (SELECT {parsed} FROM (SELECT * FROM "
           f"{_expected_rows(table)} ORDER BY {sqlgen.row_order(table)} LIMIT 1) f) e ON {same}")
    return TestQuery(name=f"first row of {table.name} from staging", sql=sql, expected=1)


def generate_test_queries(target: Target, manifest: Manifest,
                          counts: dict[str, LayerCounts] | None = None) -> list[TestQuery]:
    """Per-table counts, then checks whose expected values come from the staging text and
    rejects alone, never from the refined table: rows per foreign-key value, sums of the
    parsed numeric columns (up to three per table, keys excluded), the first staged row with
    all its parsed values, and one lookup per primary key. A load that keeps the row count but moves, changes or swaps values fails them."""
    counts = counts or all_layer_counts(target, manifest)
    out = []
    for table in manifest.tables:
        # DuckDB: typed columns whose parse refuses every null token skip the token test
        plain = (sqlgen.plain_parse_columns(target.rows, table) if target.engine.loads_natively
                 else frozenset())
        c = counts[table.name]
        staged, rejected, dups = c.staged, c.rejected, c.duplicates
        out.append(TestQuery(name=f"count {table.name}", sql=f"SELECT count(*) FROM {q(table.name)}",
                             expected=staged - rejected - dups))
        # PostgreSQL refuses to cast text that does not parse (DuckDB's TRY_CAST gives NULL):
        # there, re-parsing staging text is only safe for a table without rejects
        reparse = target.engine.lenient_cast or c.rejects == 0
        for fk in table.foreign_keys if reparse else []:
            if all(any(c.name == name for c in table.columns) for name in fk.columns):
                out.append(fk_count_query(table, fk, plain))
        keyish = set(table.primary_key) | {c for fk in table.foreign_keys for c in fk.columns}
        numeric = [c for c in table.columns
                   if c.type.upper().startswith(_NUMERIC) and c.name not in keyish][:3] if reparse else []
        out += [sum_query(table, c, plain) for c in numeric]
        # every column parsed again: DuckDB only (PostgreSQL has no try_strptime for dates)
        if (table.primary_key and target.engine.lenient_cast and target.engine.has_strptime
                and staged - rejected - dups > 0):
            out.append(row_query(table, plain))
        if table.primary_key:
            # the key's text as the database writes it (Python's str of a value can differ:
            # a TIMESTAMPTZ reads back as `+00:00` where DuckDB writes `+00`)
            keys = ", ".join(q(c) for c in table.primary_key)
            texts = ", ".join(f"CAST({q(c)} AS VARCHAR)" for c in table.primary_key)
            row = target.rows(f"SELECT {texts} FROM {q(table.name)} ORDER BY {keys} LIMIT 1")
            if row and all(v is not None for v in row[0]):
                where = " AND ".join(f"CAST({q(c)} AS VARCHAR) = {sql_str(v)}"
                                     for c, v in zip(table.primary_key, row[0], strict=True))
                out.append(TestQuery(name=f"lookup {table.name} by key",
                                     sql=f"SELECT count(*) FROM {q(table.name)} WHERE {where}", expected=1))
    return out


def run_test_queries(target: Target, queries: list[TestQuery]) -> list[TestQuery]:
    """Each query's single value against its expected one (`scalar_values`: in batches; a
    driver error is that query's failure)."""
    for query, value in zip(queries, scalar_values(target, [query.sql for query in queries]), strict=True):
        if isinstance(value, Exception):
            query.passed, query.error = False, f"{type(value).__name__}: {str(value).splitlines()[0]}"
        else:
            _judge(query, value)
    return queries


def _judge(query: TestQuery, actual: int) -> None:
    query.actual = actual
    query.passed = actual == query.expected
    query.error = None if query.passed else f"expected {query.expected}, got {actual}"


def _rollback(target: Target) -> None:
    if not getattr(target.con, "autocommit", True):  # a failed statement ends the transaction
        target.con.rollback()


def blocks(item: object) -> bool:
    """A failed check fails acceptance unless it is a finding for review (a weak key)."""
    return not item.passed and getattr(item, "blocking", True)


def _axis(items: list, what: str) -> AxisResult:
    failed = [getattr(i, "table", getattr(i, "name", "?")) for i in items if blocks(i)]
    review = [getattr(i, "table", "?") for i in items if not i.passed and not blocks(i)]
    return AxisResult(
        passed=not failed,
        summary=f"{len(items) - len(failed) - len(review)}/{len(items)} {what} pass"
        + (f"; failing: {', '.join(sorted(set(failed)))}" if failed else "")
        + (f"; for review (weakly inferred, not blocking): {', '.join(sorted(set(review)))}" if review else ""),
    )


def planted_problems(report: ValidationReport, manifest: Manifest, interp: Interpretation | None) -> list[str]:
    if interp is None:
        return []
    tables = {t.sources[0]: t for t in manifest.tables}
    rows = {r.table: r for r in report.row_counts}
    keys = {(k.table, k.kind, tuple(k.columns)): k for k in report.key_validity}
    out = []
    for issue in interp.quality_issues:
        table = tables.get(issue.source)
        head = f"{issue.source}{'.' + issue.column if issue.column else ''} {issue.kind} ({issue.count})"
        if table is None:
            out.append(f"{head}: source not loaded")
            continue
        action = ""
        col = next((c for c in table.columns if c.source_column == issue.column), None)
        if issue.kind == "duplicate_rows":
            action = f"{rows[table.name].duplicates_removed} exact duplicate rows removed from {table.name}"
        elif issue.kind == "unparseable_values" and col is not None:
            n = sum(v for r, v in next(x for x in report.load_integrity if x.table == table.name).reasons.items()
                    if r.startswith(f"{issue.column}:"))
            action = (f"{n} values kept in rejects.{table.name} and set to NULL in {table.name} (on_error: null_value)"
                      if col.on_error == "null_value" else
                      f"{n} rows routed to rejects.{table.name} ('{issue.column}: not a {col.type}')")
        elif issue.kind == "orphan_foreign_keys":
            fk = next((k for (t, kind, _), k in keys.items() if t == table.name and kind == "foreign_key"
                       and issue.column in [c.source_column for c in table.columns if c.name in k.columns]), None)
            if fk:
                action = (f"{fk.orphan_rows} orphan rows -> {fk.ref_table}; "
                          + (f"allowed: {fk.reason}" if fk.allowed else "not allowed"))
        elif issue.column and col is None:
            action = "column excluded"
        elif col is not None and col.normalizations:
            action = "; ".join(col.normalizations)
        elif col is not None:
            action = "kept as in the file (no override)"
        elif issue.kind in ("composite_key", "unique_key_not_named_id"):
            action = f"primary key {table.primary_key}"
        out.append(f"{head}: {action or 'noted'}")
    return out


def validate(target: Target, manifest: Manifest, interp: Interpretation | None = None) -> ValidationReport:
    report = ValidationReport(
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        warehouse=target.engine.redacted_target or target.warehouse,
        dialect=target.dialect,
    )
    counts = all_layer_counts(target, manifest)
    report.row_counts = check_row_counts(target, manifest, counts)
    report.column_coverage = check_column_coverage(target, manifest)
    report.key_validity = check_keys(target, manifest)
    report.load_integrity = check_load_integrity(target, manifest, counts)
    report.test_queries = run_test_queries(target, generate_test_queries(target, manifest, counts))
    return decide(report, manifest, interp)


def decide(report: ValidationReport, manifest: Manifest, interp: Interpretation | None) -> ValidationReport:
    """Sum the four axes' findings (and the test queries) into the verdict: accepted when every
    axis passes; the planted problems the expert declared are matched against the findings. The
    tables of files that may be one table fail row-count reconciliation until the expert decides."""
    report.open_questions = [q.message for q in manifest.questions]
    asked = {t: q for q in manifest.questions for t in q.tables}
    for entry in report.row_counts:
        question = asked.get(entry.table)
        if question is not None and entry.passed:
            entry.passed = False
            entry.message = f"undecided: {question.message} ({entry.message})"
    report.axes = {
        "row_count_reconciliation": _axis(report.row_counts, "tables"),
        "column_coverage": _axis(report.column_coverage, "tables"),
        "key_validity": _axis(report.key_validity, "keys"),
        "load_integrity": _axis(report.load_integrity, "tables"),
        "test_queries": _axis(report.test_queries, "queries"),
    }
    report.accepted = all(a.passed for a in report.axes.values()) and not report.open_questions
    report.planted_problems = planted_problems(report, manifest, interp)
    return report


def render_markdown(report: ValidationReport) -> str:
    out = ["# Validation report\n", f"Warehouse: `{report.warehouse}` ({report.dialect}), {report.generated_at}\n",
           f"**accepted: {str(report.accepted).lower()}**\n", "| check | passed | summary |", "|---|---|---|"]
    for name, axis in report.axes.items():
        out.append(f"| {name} | {'yes' if axis.passed else '**no**'} | {axis.summary} |")
    if report.open_questions:
        out += ["\n## Open questions (not accepted until decided)\n"] + [f"- {m}" for m in report.open_questions]
    out += ["\n## Row counts\n", "| table | source | staged | refined | rejected | duplicates | unparsed lines | ok |",
            "|---|---|---|---|---|---|---|---|"]
    for r in report.row_counts:
        out.append(f"| {r.table} | {r.source_rows} | {r.staged} | {r.refined} | {r.rejected} | "
                   f"{r.duplicates_removed} | {r.unparsed_lines} | {'yes' if r.passed else '**no**: ' + r.message} |")
        out += [f"| {r.table} <- {f.file} | {f.staged + f.unparsed_lines} | {f.staged} | {f.refined} | {f.rejected} | "
                f"{f.duplicates_removed} | {f.unparsed_lines} | {'yes' if f.passed else '**no**: ' + f.message} |"
                for f in r.files]
    out += ["\n## Column coverage\n"]
    for c in report.column_coverage:
        line = f"- `{c.table}`: {len(c.carried)} carried"
        if c.renamed:
            line += ", renamed " + ", ".join(f"{k} -> {v}" for k, v in c.renamed.items())
        if c.excluded:
            line += ", excluded " + ", ".join(f"{k} ({v})" for k, v in c.excluded.items())
        if c.missing:
            line += f", **missing {c.missing}**"
        out.append(line)
    out += ["\n## Keys\n", "Keys the expert declared or with strong evidence block acceptance; weakly inferred "
            "keys the data contradicts are listed for review.\n",
            "| table | key | evidence | duplicates | NULL keys | orphans | allowed | ok |", "|---|---|---|---|---|---|---|---|"]
    for k in report.key_validity:
        key = f"{k.kind} ({', '.join(k.columns)})" + (f" -> {k.ref_table}" if k.ref_table else "")
        ex = f" e.g. {', '.join(k.examples[:5])}" if k.examples else ""
        ok = "yes" if k.passed else ("**no**" if k.blocking else "review")
        out.append(f"| {k.table} | {key} | {'blocking' if k.blocking else 'weak'} | {k.duplicate_keys} | "
                   f"{k.null_keys} | {k.orphan_rows} | {k.reason if k.allowed else ''} | {ok}{ex} |")
    out += ["\n## Rejects\n"]
    for r in report.load_integrity:
        reasons = "; ".join(f"{k}: {v}" for k, v in r.reasons.items())
        kept = f", {r.values_nulled} of them rows kept with the value set to NULL" if r.values_nulled else ""
        out.append(f"- `{r.table}`: {r.rejected} in rejects{kept} (rejected rows {r.reject_fraction:.2%})"
                   f"{' - ' + reasons if reasons else ''}" + ("" if r.passed else f" **{r.message}**"))
    out += ["\n## Test queries\n"]
    for t in report.test_queries:
        out.append(f"- {'ok' if t.passed else '**FAIL**'} {t.name}: expected {t.expected}, got {t.actual}"
                   + (f" ({t.error})" if t.error and not t.passed else ""))
    if report.planted_problems:
        out += ["\n## Data problems and what the load did\n"] + [f"- {p}" for p in report.planted_problems]
    return "\n".join(out) + "\n"
