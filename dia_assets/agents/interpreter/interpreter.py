"""The Data Interpreter (DIA §3.3): raw files in, an interpretation out, all by executed code."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from dia_assets.agents.interpreter import keys, one_table, quality
from dia_assets.agents.interpreter.declared_keys import apply_declared
from dia_assets.agents.interpreter.join_paths import join_paths
from dia_assets.agents.interpreter.names import (
    distinct_derived_names,
    refused_issues,
    schema_file_issues,
    source_name,
)
from dia_assets.agents.interpreter.profile import SourceProfile, profile_table
from dia_assets.agents.interpreter.table_info import TableInfo, Tables
from dia_assets.contracts.interpretation import (
    INTERPRETATION_VERSION,
    Interpretation,
    ParseInfo,
    QualityIssue,
    Source,
)
from dia_assets.platform import limits
from dia_assets.platform.files.compressed import compression
from dia_assets.platform.files.discover import RawFile, TextScan, discover, hash_and_scan
from dia_assets.platform.files.readers import LoadedSource, read_source, scratch_dir
from dia_assets.platform.files.scanned import read_on_clean_guess
from dia_assets.platform.naming import quote_ident

log = logging.getLogger("dia.interpreter")
Progress = Callable[[str], None]


# Issues found after profiling (keys, foreign keys, a schema file's keys): recomputed on
# every run, never carried over from a previous interpretation.
RECOMPUTED_KINDS = {"duplicate_keys", "no_primary_key", "orphan_foreign_keys", "declared_key_violated",
                    "declared_key_unused", "source_renamed", "range_partitioned", "one_table_question",
                    "files_united", "files_kept_separate", "duplicate_rows_across_files"}


def interpret(data_dir: str | Path, progress: Progress | None = None,
              previous: Interpretation | None = None, decisions: Mapping[str, str] | None = None) -> Interpretation:
    """Profile every source under `data_dir`. One bad file never fails the run.

    Files that are one table become one source, or a question for the expert (`one_table.py`);
    `decisions`: the expert's (file group name -> union | separate, the overrides' `files`).

    With `previous` (the last interpretation of the same folder), a file whose content hash
    is unchanged keeps its profile, so one changed file costs one profile. A file that gives
    one source also keeps the keys its rows gave (`found_keys`) and is not read at all unless
    a query needs its rows (a foreign key measured against it): it is hashed first when its
    size is unchanged. Other unchanged files are read again and their keys found again."""
    say = progress or log.info
    reusable = _reusable(previous, Path(data_dir).resolve())
    kept_at = {rel: kept for (rel, _digest), kept in reusable.items()}  # one content hash per path
    root = Path(data_dir).resolve()
    refused: list[RawFile] = []
    files = discover(root, refused)
    result = Interpretation(data_dir=str(root), generated_at=datetime.now(UTC).isoformat(timespec="seconds"))
    con = duckdb.connect(config={"preserve_insertion_order": True})
    con.execute("SET enable_progress_bar = false")
    con.execute("SET TimeZone = 'UTC'")  # offsets are read as instants; shown in UTC, as the loader does
    infos: list[TableInfo] = []
    used: set[str] = set()
    restored: set[str] = set()  # sources whose keys were kept, not found again
    result.quality_issues.extend(refused_issues(root, refused))
    result.quality_issues.extend(schema_file_issues(root))
    with scratch_dir() as tmp, ThreadPoolExecutor(max_workers=1) as hasher:
        limits.configure(con, Path(tmp) / "spill")
        for index, raw in enumerate(files):
            rel = str(raw.path.relative_to(root))
            name, renamed = source_name(root, raw.path, used)
            if renamed:
                result.quality_issues.append(renamed)
            if raw.format is None:
                result.quality_issues.append(QualityIssue(
                    source=name, kind="unsupported_format", severity="info",
                    message=f"{rel}: format {_suffix(raw.path)} is not read",
                    suggested_action="Convert to CSV, JSON, Excel or Parquet (CSV and JSON may be gzip or zstd "
                    "compressed), or remove it from the folder.",
                ))
                continue
            say(f"[{index + 1}/{len(files)}] reading {rel}")
            size = raw.path.stat().st_size
            unread = rel in kept_at and _keeps_keys(kept_at[rel], name, size)
            hashing = hasher.submit(hash_and_scan, raw.path)
            early = None if unread else read_on_clean_guess(  # no read before the hash says it changed
                con, raw.path, raw.format, name, f"src_{index}", Path(tmp), lambda h=hashing: h.result()[1])
            digest, scan = hashing.result()
            try:
                kept = reusable.get((rel, digest))
                done = None
                if kept is not None and _keeps_keys(kept, name, size):
                    done = _reuse_unread(con, raw.path, raw.format, name, index, Path(tmp), scan, rel, kept)
                    restored.add(name)
                    say(f"    unchanged since the last interpretation: {rel} (profile and keys kept, not read)")
                elif kept is not None:
                    try:
                        done = _reuse_file(con, raw.path, raw.format, name, index, Path(tmp), scan, rel, kept, used,
                                           early)
                        say(f"    unchanged since the last interpretation: {rel} (profile kept)")
                    except _Changed:
                        done = None
                if done is None:
                    done = _read_file(con, raw.path, raw.format, name, index, Path(tmp), scan, rel, digest, size,
                                      say, used, early)
            except Exception as exc:  # noqa: BLE001 - one file that cannot be processed never stops the others
                log.debug("processing %s failed", rel, exc_info=True)
                done = _failed_file(raw.path, raw.format, name, rel, digest, size, exc)
            for source, issues, info in done:
                used.add(source.name)
                result.sources.append(source)
                result.quality_issues.extend(issues)
                if info is not None:
                    infos.append(info)
        grouping = one_table.unite(con, result, infos, decisions or {}, say)
        restored -= grouping.united
        say(f"finding keys in {len(infos) - len(restored)} sources")
        for info in infos:
            try:
                if info.source.name not in restored:
                    keys.find_keys(con, info)
            except Exception as exc:  # noqa: BLE001 - the source keeps its profile, without a key
                result.quality_issues.append(_failure_issue(info.source.name, info.source.path, "finding its keys", exc))
                continue
            result.quality_issues.extend(quality.key_issues(info.source))
        finder = keys.Finder(con, infos, grouping.apart)
        result.foreign_keys = finder.find()
        if keys.revise_keys(con, infos, result.foreign_keys):  # keys other tables refer to, link tables
            result.foreign_keys = finder.find()
        result.quality_issues.extend(quality.fk_issues(result.foreign_keys))
        apply_declared(result, con, Tables(infos))  # a .sql's keys win
        result.join_paths = join_paths(result.sources, result.foreign_keys)
    con.close()
    return result


Done = list[tuple[Source, list[QualityIssue], TableInfo | None]]
Kept = tuple[list[Source], list[QualityIssue]]


def _reusable(previous: Interpretation | None, root: Path) -> dict[tuple[str, str], Kept]:
    """(relative path, content hash) -> the previous sources and profile issues of that file.
    Only a previous interpretation of this very folder whose sources all read cleanly counts."""
    if previous is None or Path(previous.data_dir).resolve() != root or previous.version != INTERPRETATION_VERSION:
        return {}
    out: dict[tuple[str, str], Kept] = {}
    for src in previous.sources:
        if not src.files:  # a union is made again from its files' reads
            out.setdefault((src.path, src.content_hash), ([], []))[0].append(src)
    for (_rel, _digest), (sources, issues) in list(out.items()):
        if not all(s.parse.ok and s.columns for s in sources):
            del out[(_rel, _digest)]
            continue
        names = {s.name for s in sources}
        issues.extend(i for i in previous.quality_issues if i.source in names and i.kind not in RECOMPUTED_KINDS)
    return out


def _keeps_keys(kept: Kept, name: str, size: int) -> bool:
    """Whether the previous interpretation of a file holds it, at this size, as the one source
    `name` with the keys its rows gave: then, if its hash agrees, it need not be read."""
    sources = kept[0]
    return len(sources) == 1 and sources[0].name == name and sources[0].size_bytes == size and (
        sources[0].found_keys is not None)


def _reuse_unread(
    con: duckdb.DuckDBPyConnection, path: Path, fmt: str, name: str, index: int, tmp: Path,
    scan: TextScan, rel: str, kept: Kept,
) -> Done:
    """An unchanged file of one source keeps its profile and its keys; its rows are read on
    first use (`TableInfo`), when a foreign key is measured against them."""
    sources, issues = kept
    source = sources[0].model_copy(deep=True)
    keys.restore_found_keys(source)

    def read() -> str:
        entries = read_source(con, path, fmt, name, f"src_{index}", tmp, scan)
        if [e.name for e in entries] != [name] or not entries[0].table:
            problems = "; ".join(e for entry in entries for e in entry.parse.errors)
            raise RuntimeError(f"{rel}: read on demand, its unchanged bytes no longer give the source {name!r} "
                               f"({problems or 'other sources'}); interpret from scratch (`dia build --full`)")
        return entries[0].table

    return [(source, [i for i in issues if i.source == name], TableInfo(source, read))]


def _reuse_file(
    con: duckdb.DuckDBPyConnection, path: Path, fmt: str, name: str, index: int, tmp: Path,
    scan: TextScan, rel: str, kept: Kept, used: set[str], early: list[LoadedSource] | None = None,
) -> Done:
    """Read an unchanged file (its keys are measured again) and keep its profile. Falls back
    to a full read when the reader now gives other sources than last time. `early`: the read
    already made on the right guess of `scan`."""
    entries = early if early is not None else read_source(con, path, fmt, name, f"src_{index}", tmp, scan)
    renamed = distinct_derived_names(entries, name, used, rel)
    sources, issues = kept
    by_name = {s.name: s for s in sources}
    if sorted(e.name for e in entries) != sorted(by_name) or any(not e.table for e in entries):
        raise _Changed(rel)
    done: Done = []
    for loaded in entries:
        source = by_name[loaded.name].model_copy(deep=True)
        source.primary_key, source.candidate_keys, source.range_partition = None, [], None
        done.append((source, [i for i in issues if i.source == source.name], TableInfo(source, loaded.table)))
    if renamed and done:
        done[0][1].extend(renamed)
    return done


class _Changed(Exception):
    """A file kept its bytes but the reader no longer gives the sources recorded for it."""


def _read_file(
    con: duckdb.DuckDBPyConnection, path: Path, fmt: str, name: str, index: int, tmp: Path,
    scan: TextScan, rel: str, digest: str, size: int, say: Progress, used: set[str],
    early: list[LoadedSource] | None = None,
) -> Done:
    """Read and profile one file into its sources (several for workbooks and nested JSON);
    `early`: the read already made on the right guess of `scan`."""
    done: Done = []
    entries = early if early is not None else read_source(con, path, fmt, name, f"src_{index}", tmp, scan)
    renamed = distinct_derived_names(entries, name, used, rel)
    for loaded in entries:
        refusal = limits.too_wide(_width(con, loaded.table)) if loaded.table else None
        if refusal:
            con.execute(f"DROP TABLE IF EXISTS {quote_ident(loaded.table)}")
            loaded.fail(refusal)
        source, profile = _profile(con, loaded, rel, digest, size, say)
        issues = list(loaded.issues)
        info = None
        if loaded.table and profile is not None and source.columns:
            info = TableInfo(source, loaded.table)
            issues.extend(quality.column_issues(con, source, loaded.table, profile))
        done.append((source, issues, info))
    if renamed and done:
        done[0][1].extend(renamed)
    return done


def _suffix(path: Path) -> str:
    """`.gz` alone says little: a compressed file shows both extensions (`.xlsx.gz`)."""
    if compression(path):
        return "".join(path.suffixes[-2:])
    return path.suffix or "(no extension)"


def _width(con: duckdb.DuckDBPyConnection, table: str) -> int:
    """Columns as read (a header wider than the reader's sample can name fewer)."""
    return len(con.execute(f"DESCRIBE {quote_ident(table)}").fetchall())


def _failed_file(path: Path, fmt: str, name: str, rel: str, digest: str, size: int, exc: Exception) -> Done:
    """The one entry a file gets when reading or profiling it failed unexpectedly."""
    issue = _failure_issue(name, rel, "reading or profiling it", exc)
    source = Source(name=name, path=rel, format=fmt, content_hash=digest, size_bytes=size,
                    parse=ParseInfo(ok=False, errors=[issue.message.split(": ", 1)[1]]))
    return [(source, [issue], None)]


def _failure_issue(name: str, rel: str, step: str, exc: Exception) -> QualityIssue:
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    if isinstance(exc, duckdb.OutOfMemoryException | MemoryError):
        first = f"out of memory within DIA_MEMORY_LIMIT={limits.memory_limit()} ({first})"
    return QualityIssue(
        source=name, kind="unreadable_file", severity="error",
        message=f"{rel}: {step} failed: {type(exc).__name__}: {first}",
        suggested_action="Other sources are unaffected. Raise DIA_MEMORY_LIMIT for a very large file, "
        "or fix or split the file and interpret again.",
    )


def _profile(
    con: duckdb.DuckDBPyConnection, loaded: LoadedSource, rel: str, digest: str, size: int, say: Progress
) -> tuple[Source, SourceProfile | None]:
    source = Source(
        name=loaded.name, path=rel, format=loaded.format, content_hash=digest, size_bytes=size,
        parse=loaded.parse if loaded.parse else ParseInfo(), parent=loaded.parent,
        declared=loaded.declared,
    )
    if not loaded.table:
        return source, None
    say(f"    profiling {loaded.name}")
    profile = profile_table(con, loaded.table)
    originals = dict(zip([c.name for c in profile.columns], loaded.original_columns, strict=False))
    for col in profile.columns:
        col.original_name = originals.get(col.name, col.name)
    source.columns = profile.columns
    source.row_count = profile.rows
    source.duplicate_rows = profile.duplicate_rows
    return source, profile
