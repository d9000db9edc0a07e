"""Load: raw files -> staging (text + provenance) -> refined (typed, deduplicated, keyed)
and rejects (raw values + provenance + reason). Nothing is dropped silently.

DuckDB loads are atomic: the warehouse is built in a new file beside the old one and
swapped in with `os.replace`. PostgreSQL targets are built in DuckDB first, then
copied in one transaction.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb

from dia_assets.agents.schema_creator import sqlgen, swap, width
from dia_assets.contracts.manifest import Manifest, ManifestFile, ManifestTable
from dia_assets.platform.files.discover import unsafe_reason
from dia_assets.platform.files.readers import LoadedSource, bad_json_lines
from dia_assets.platform.files.scanned import read_scanned
from dia_assets.platform.files.temp import temp_prefix
from dia_assets.platform.naming import quote_ident as q
from dia_assets.platform.naming import sql_str

StepHook = Callable[[str], None]
Check = Callable[[Path], bool]  # validates a built file; True when it may replace the target
BeforeInstall = Callable[[Any, Path, str], None]  # (check's verdict, built file, content hash)


class SourceMissingError(FileNotFoundError):
    """A source file named in the manifest is gone since interpretation."""


class LoadError(RuntimeError):
    """A source could not be read at load time."""


@dataclass
class TableLoad:
    name: str
    staged: int = 0
    refined: int = 0
    rejected: int = 0
    unparsed_lines: int = 0
    duplicates_removed: int = 0
    values_nulled: int = 0
    primary_key_enforced: bool = False
    foreign_keys_enforced: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class LoadResult:
    warehouse: str
    dialect: str
    loaded_at: str
    tables: dict[str, TableLoad] = field(default_factory=dict)
    applied_ddl: list[str] = field(default_factory=list)
    installed: bool = True
    rejected_build: str | None = None  # where a build that was not installed was kept
    content_hash: str | None = None  # of the DuckDB file this load produced

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2)


Reads = list[tuple[ManifestFile, LoadedSource]]  # a table's files, each with the reader's output


def check_sources(manifest: Manifest, data_dir: str | Path) -> None:
    for table in manifest.tables:
        for file in table.files():
            path = Path(data_dir) / file.path
            if not path.is_file():
                raise SourceMissingError(
                    f"source file {file.path!r} (table {table.name!r}) is missing from {data_dir}: "
                    "it was interpreted but has vanished since; restore it or re-run the interpreter"
                )
            problem = unsafe_reason(Path(data_dir), path)
            if problem:  # the file was replaced by a link out of the folder since interpretation
                raise LoadError(f"source file {file.path!r} (table {table.name!r}) is {problem}")


def load_duckdb(
    manifest: Manifest, data_dir: str | Path, target: str | Path, hook: StepHook | None = None,
    check: Check | None = None, replace_anyway: bool = False, before_install: BeforeInstall | None = None,
) -> LoadResult:
    """Build the warehouse beside `target`, check it, then swap it in.

    A failure leaves `target` as it was. A build that `check` does not accept replaces an
    existing warehouse only with `replace_anyway`; otherwise it is kept beside the target
    (`<stem>-rejected.duckdb`) for inspection and the previous warehouse stays in place."""
    target = Path(target).resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    check_sources(manifest, data_dir)
    done = swap.build_beside(target, lambda con: build_into(con, manifest, data_dir, hook), check or (lambda _: True),
                             lambda accepted: accepted or replace_anyway or not target.exists(), hook,
                             before_install=before_install)
    result = done.built
    if not done.installed:
        result.installed, result.rejected_build = False, str(done.final)
    result.warehouse = str(target)
    result.content_hash = done.digest
    return result


def build_into(
    con: duckdb.DuckDBPyConnection, manifest: Manifest, data_dir: str | Path, hook: StepHook | None = None,
    known: dict[str, TableLoad] | None = None,
) -> LoadResult:
    """Run the whole load on an open DuckDB connection (an empty database). `known`: tables
    already in the database (an incremental reload), which foreign keys may reference."""
    check_sources(manifest, data_dir)
    loaded_at = datetime.now(UTC).replace(tzinfo=None).isoformat(sep=" ", timespec="seconds")
    result = LoadResult(warehouse="", dialect="duckdb", loaded_at=loaded_at)
    result.tables.update(known or {})
    _run(con, "SET TimeZone = 'UTC'")
    # DuckDB draws a progress bar on stdout for statements over 2 s: it would break the
    # CLI's and the benches' output (and a Dagster step's log) with terminal escapes.
    _run(con, "SET enable_progress_bar = false")
    home = _run(con, "SELECT current_database()")[0][0]
    _run(con, "ATTACH ':memory:' AS scratch")
    with tempfile.TemporaryDirectory(prefix=temp_prefix("dia-load-")) as tmp:
        readers = _read_sources(con, manifest, Path(data_dir), Path(tmp), home)
        # The readers ran in file order (a reader table's rowid is the record number, which
        # staging keeps as _source_row). From here on, order is carried by _source_row, not
        # by the storage: unordered bulk writes go to disk in parallel as they are made,
        # leaving the one checkpoint next to nothing to compress and write.
        _run(con, "SET preserve_insertion_order = false")
        _run(con, "CREATE SCHEMA IF NOT EXISTS staging")
        _run(con, "CREATE SCHEMA IF NOT EXISTS rejects")
        for table in manifest.tables:
            result.tables[table.name] = _load_table(con, table, readers[table.name], loaded_at, result, hook)
    _run(con, f"USE {q(home)}")
    _run(con, "DETACH scratch")
    _run(con, "RESET preserve_insertion_order")
    return result


def _read_sources(
    con: duckdb.DuckDBPyConnection, manifest: Manifest, data_dir: Path, tmp: Path, home: str
) -> dict[str, Reads]:
    """Read every file once with the interpreter's readers (`read_scanned`); map table ->
    its files' reader output, and give each table its raw view (`_raw_view`)."""
    by_file: dict[tuple[str, str], list[tuple[ManifestTable, ManifestFile]]] = {}
    for table in manifest.tables:
        for file in table.files():
            by_file.setdefault((file.path, file.format), []).append((table, file))
    out: dict[str, Reads] = {table.name: [] for table in manifest.tables}
    _run(con, "USE scratch")
    try:
        for index, ((rel, fmt), uses) in enumerate(by_file.items()):
            first = uses[0][0]
            stem = first.name if first.source_files else first.reader_stem  # a union's file is one source
            loaded = read_scanned(con, data_dir / rel, fmt, stem, f"src_{index}", tmp)
            # The CSV reader ends on fetchone(); drain so the next reader may register data.
            _run(con, "SELECT 1")
            by_name = {entry.name: entry for entry in loaded}
            by_ref = {}  # a part renamed by the interpreter (its name was taken) keeps its reference
            for entry in loaded:
                by_ref.setdefault(_ref(rel, entry), []).append(entry)
            for table, file in uses:
                same_ref = by_ref.get(file.ref, [])
                entry = same_ref[0] if len(same_ref) == 1 else by_name.get(table.sources[0])
                if entry is None or entry.table is None:
                    errors = "; ".join(e for x in loaded for e in x.parse.errors) or "source not found in file"
                    raise LoadError(f"cannot read {rel} for table {table.name!r}: {errors}")
                out[table.name].append((file, entry))
    finally:
        _run(con, f"USE {q(home)}")
    for table in manifest.tables:
        _raw_view(con, table, out[table.name])
    return out


def _raw_view(con: duckdb.DuckDBPyConnection, table: ManifestTable, reads: Reads) -> None:
    """The temporary view staging is made from: the reader's table with its row order
    (`__dia_rowid`); for a table of several files, their union by column name (a column a
    file lacks is NULL), each row with its file (`__dia_file`)."""
    have = [{r[0] for r in _run(con, f"DESCRIBE scratch.main.{q(entry.table)}")} for _file, entry in reads]
    for (file, _entry), cols in zip(reads, have, strict=True):
        missing = [c for c in (file.columns if table.source_files else table.source_columns) if c not in cols]
        if missing:
            raise LoadError(f"{file.path}: column(s) {missing} of table {table.name!r} are gone since "
                            "interpretation; re-run the interpreter")
    if not table.source_files:
        select = f"SELECT *, rowid AS __dia_rowid FROM scratch.main.{q(reads[0][1].table)}"
    else:
        select = " UNION ALL ".join(
            "SELECT " + ", ".join(f"CAST({q(c) if c in cols else 'NULL'} AS VARCHAR) AS {q(c)}"
                                  for c in table.source_columns)
            + f", {sql_str(file.ref)} AS __dia_file, rowid AS __dia_rowid FROM scratch.main.{q(entry.table)}"
            for (file, entry), cols in zip(reads, have, strict=True))
    _run(con, f"CREATE OR REPLACE TEMP VIEW {q(sqlgen.raw_view(table))} AS {select}")


def _ref(rel: str, entry: LoadedSource) -> str:
    """The source reference the planner gives a table (plan.py): path, #sheet, JSON path."""
    return rel + (f"#{entry.parse.sheet}" if entry.parse.sheet else "") + (entry.parse.json_path or "")


def _run(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> list:
    """Execute and drain: DuckDB 2.0 refuses new work while a result is unread."""
    return con.execute(sql, params).fetchall() if params else con.execute(sql).fetchall()


def _count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    return int(con.execute(sql).fetchone()[0])


def _load_table(
    con: duckdb.DuckDBPyConnection, table: ManifestTable, reads: Reads, loaded_at: str,
    result: LoadResult, hook: StepHook | None,
) -> TableLoad:
    stats = TableLoad(name=table.name)
    _run(con, sqlgen.staging_ctas_sql(table, loaded_at))
    _run(con, sqlgen.create_reject_sql(table))
    if hook:
        hook(f"staging:{table.name}")
    for file, reader in reads:
        _unparsed_lines(con, table, file, reader, loaded_at)
    stats.unparsed_lines = _count(con, f"SELECT count(*) FROM {sqlgen.reject_ref(table)} WHERE _raw_line IS NOT NULL")
    pk_ok = bool(table.primary_key) and table.primary_key_enforced
    fks = [fk for fk in table.foreign_keys if fk.enforced]
    for fk in list(fks):
        parent = result.tables.get(fk.ref_table)
        if parent is None or not parent.primary_key_enforced:
            stats.notes.append(f"foreign key {fk.columns} -> {fk.ref_table} not declared: parent key not declared")
            fks.remove(fk)
    create = sqlgen.create_refined_sql(table, primary_key=pk_ok, foreign_keys=fks)
    plain = sqlgen.plain_parse_columns(lambda sql: _run(con, sql), table)
    refused = _refused_rows(con, table, plain, stats)
    try:
        # Optimistic: the constraints usually hold, and checking them first costs a pass.
        # Keys come after the bulk load: one index build, not one index insert per row.
        for sql in sqlgen.bulk_refined_sql(table, primary_key=pk_ok, foreign_keys=fks, plain=plain, refused=refused):
            _run(con, sql)
    except duckdb.ConstraintException:
        _run(con, f"DROP TABLE {q(table.name)}")
        pk_ok, fks = _diagnose(con, table, pk_ok, fks, stats, plain, refused)
        create = sqlgen.create_refined_sql(table, primary_key=pk_ok, foreign_keys=fks)
        _run(con, create)
        _run(con, sqlgen.refined_insert_sql(table, plain, refused))
    if refused:
        _run(con, f"DROP TABLE {q(refused)}")
    result.applied_ddl.append(create)
    staged = _count(con, f"SELECT count(*) FROM {sqlgen.staging_ref(table)}")
    refined = _count(con, f"SELECT count(*) FROM {q(table.name)}")
    if refined < staged or any(c.on_error == "null_value" for c in table.columns):
        # Rows missing from refined are duplicates or rejects: find the rejects (a full
        # pass, skipped when every staged row reached the refined table).
        _run(con, sqlgen.reject_insert_sql(table))
    if hook:
        hook(f"refined:{table.name}")
    stats.primary_key_enforced = pk_ok
    stats.foreign_keys_enforced = [f"({', '.join(f.columns)}) -> {f.ref_table}" for f in fks]
    stats.staged, stats.refined = staged, refined
    total_rejects = _count(con, f"SELECT count(*) FROM {sqlgen.reject_ref(table)}")
    kept = _count(con, f"SELECT count(*) FROM {sqlgen.reject_ref(table)} WHERE _row_kept")
    stats.values_nulled = kept
    stats.rejected = total_rejects - stats.unparsed_lines - kept
    stats.duplicates_removed = stats.staged - stats.refined - stats.rejected
    return stats


def _refused_rows(
    con: duckdb.DuckDBPyConnection, table: ManifestTable, plain: frozenset[str], stats: TableLoad,
) -> str | None:
    """On a table with more row checks than `width.check_chunk()`, run them first, a chunk per
    statement, into a temporary table of refused rows (its name is returned): one statement
    carrying every check beside every parse is what peaked at 10,000 columns. The same rows
    are refused either way; the note says the table was built this way."""
    chunk = width.check_chunk()
    checks = len(sqlgen.row_checks(table))
    if checks <= chunk:
        return None
    name = f"__refused_{table.name}"
    for sql in sqlgen.refused_rows_sql(table, plain, name, chunk):
        _run(con, sql)
    stats.notes.append(f"wide table: its {checks:,} row checks ran in {-(-checks // chunk)} statements of at most "
                       f"{chunk:,} (DIA_WIDE_CHUNK) before the refined build")
    return name


def _diagnose(
    con: duckdb.DuckDBPyConnection, table: ManifestTable, pk_ok: bool, fks: list, stats: TableLoad,
    plain: frozenset[str] = frozenset(), refused: str | None = None,
) -> tuple[bool, list]:
    """Which declared constraints the data contradicts; those are left out and reported."""
    rows = f"({sqlgen.refined_select_sql(table, plain, refused)})"
    if pk_ok:
        keys = ", ".join(q(c) for c in table.primary_key)
        nulls = " OR ".join(f"{q(c)} IS NULL" for c in table.primary_key)
        dupes = _count(con, f"SELECT count(*) FROM (SELECT {keys} FROM {rows} r GROUP BY {keys} HAVING count(*) > 1)")
        null_keys = _count(con, f"SELECT count(*) FROM {rows} r WHERE {nulls}")
        if dupes or null_keys:
            pk_ok = False
            stats.notes.append(f"primary key {table.primary_key} not declared: {dupes} duplicate and "
                               f"{null_keys} NULL key values")
    kept = []
    for fk in fks:
        cond = " AND ".join(f"p.{q(pc)} = c.{q(cc)}" for cc, pc in zip(fk.columns, fk.ref_columns, strict=True))
        present = " AND ".join(f"c.{q(cc)} IS NOT NULL" for cc in fk.columns)
        orphans = _count(con, f"SELECT count(*) FROM {rows} c WHERE {present} AND NOT EXISTS "
                              f"(SELECT 1 FROM {q(fk.ref_table)} p WHERE {cond})")
        if orphans:
            stats.notes.append(f"foreign key {fk.columns} -> {fk.ref_table} not declared: {orphans} orphan rows")
        else:
            kept.append(fk)
    return pk_ok, kept


def _unparsed_lines(
    con: duckdb.DuckDBPyConnection, table: ManifestTable, file: ManifestFile, reader: LoadedSource, loaded_at: str
) -> None:
    """Lines the reader could not split into fields go to rejects with the reader's message."""
    ref = sqlgen.reject_ref(table)
    head = f"INSERT INTO {ref} (_source_file, _source_row, _loaded_at, _content_hash, _reason, _raw_line, _row_kept) "
    if file.format == "csv" and reader.parse.bad_rows and reader.table:
        rejects = q(f"{reader.table}__rejects")
        _run(con,
            head + f"SELECT {sql_str(file.ref)}, line, TIMESTAMP {sql_str(loaded_at)}, "
            f"{sqlgen.row_hash_sql(['first(csv_line)'])}, 'unparseable line: ' || string_agg(DISTINCT error_message, '; '), "
            f"first(csv_line), false FROM {rejects} GROUP BY line"
        )
    elif file.format == "jsonl" and reader.parse.bad_rows and reader.parent is None:
        for number, line in bad_json_lines(reader.read_path or reader.path, reader.parse.encoding):
            _run(con,
                head + f"VALUES ({sql_str(file.ref)}, ?, TIMESTAMP {sql_str(loaded_at)}, "
                f"{sqlgen.row_hash_sql(['CAST(? AS VARCHAR)'])}, "
                "'unparseable line: not a JSON object', ?, false)", [number, line, line],
            )
