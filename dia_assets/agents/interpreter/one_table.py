"""Several files that are one table: one source, their union, or a question for the expert.

Files of one folder may hold one table by their names (`file_name`): the same name in
several formats (`kinds.csv` beside `kinds.json`), batches (`orders_2024_01.csv`,
`orders_2024_02.csv`: a name ending in a date, `_part_3` or `_batch_3`) or part files
(`orders/part-0001.parquet`, `orders/2024_01.csv`: the folder names the table). Names relate
files only within one folder, and only files read as one source each (no workbook of several
sheets, no nested arrays, no schema-file declaration, no unreadable file). Names told apart by
a plain number (`orders_1.csv`, `cities_iso_8859_2.csv`) are as likely several tables: they
stay apart unless the expert unites them (an info issue says so).

Such a group is read as one source when its files have the same columns (snake case, any
order) and compatible types (numbers with numbers, dates with timestamps; a column NULL
throughout agrees with any): the union of the files in path order, profiled as a whole,
each file listed with its own hash and row count (`Source.files`); the loader keeps each
record's file and row number. Rows repeated across the files are reported; the dedup policy
loads them once. A row is a copy when its values are, as parsed: `2.50` in a CSV and `2.5` in a
JSON file are one value (the loader's dedup of such a table compares the same). Otherwise the expert decides (`files: union | separate` in the overrides):
until then the files stay separate sources and an error (`one_table_question`) keeps the
build from being accepted. That is the case for a same-named file with other columns, for
batches whose columns overlap by half or more, and for types that disagree. Batches with
fewer columns in common are separate tables. No foreign key is inferred between the files
of one group (`Grouping.apart`): a table in two files has no key between its halves.

Cost: each file is profiled alone (its types decide compatibility), then the union once.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import NamedTuple

import duckdb

from dia_assets.agents.interpreter import quality
from dia_assets.agents.interpreter.profile import profile_table
from dia_assets.agents.interpreter.table_info import TableInfo
from dia_assets.agents.value_parsing import parse_expression, present
from dia_assets.contracts.interpretation import (
    Column,
    FileGroup,
    Interpretation,
    ParseInfo,
    QualityIssue,
    Source,
    SourceFile,
)
from dia_assets.platform.files.compressed import data_stem
from dia_assets.platform.files.scanned import forget_read
from dia_assets.platform.naming import quote_ident, snake_case

# Snake-case stems: a part file names no table (its folder does), a batch names its table first.
_PART = re.compile(r"(?:part|chunk|batch)_?\d+(?:_.*)?|c_\d+(?:_\d+)*")  # c_: a stem of digits (naming.snake_case)
_DATED = r"(?:19|20)\d{2}(?:_?\d{2}){0,2}|(?:19|20)\d{2}_q[1-4]"  # 2024, 2024_01, 20240115, 2024_q1
_BATCH = re.compile(rf"(?P<base>[a-z][a-z0-9_]*?)_(?:(?P<dated>{_DATED}|(?:part|chunk|batch)_?\d+)|\d+)")
QUESTION_OVERLAP = 0.5  # batches sharing at least this share of the smaller file's columns: a question
# Member issues the union makes anew: its profile's, and the rename a second file of one name got.
REPLACED_KINDS = quality.PROFILE_KINDS | {"source_renamed"}
Progress = Callable[[str], None]
log = logging.getLogger("dia.interpreter")


@dataclass
class Grouping:
    """What the grouping changed, for the steps after it."""

    apart: set[frozenset[str]] = field(default_factory=set)  # source pairs never joined by a foreign key
    united: set[str] = field(default_factory=set)  # member sources replaced by a union


class FileName(NamedTuple):
    """What a file's name says about its table."""

    folder: str
    table: str  # the table the name suggests (files of one folder with one `table` form a group)
    name: str  # the stem in lower case: `Kinds.csv` and `kinds.json` share it, `a b.csv` and `a_b.csv` do not
    numbered: bool  # only a number tells it from its neighbours (`cities_utf_8`, `cities_utf_16`): weak evidence


def file_name(rel: str) -> FileName:
    """A batch (`orders_2024_01`, `orders_part_3`) suggests its snake-case base, a part file
    (`part-0001`, `2024_01` in a folder) its folder, any other file its own name. A name told
    apart by a plain number (`orders_1`, `cities_iso_8859_2`) is numbered: as likely another
    table (an encoding, a level) as a batch, so never united without the expert."""
    path = PurePosixPath(rel)
    raw = data_stem(Path(rel))  # `kinds.csv.gz` is `kinds`
    stem, name = snake_case(raw), raw.lower()
    folder = path.parent.as_posix()
    if _PART.fullmatch(stem) and path.parent.name:
        return FileName(folder, snake_case(path.parent.name), name, False)
    batch = _BATCH.fullmatch(stem)
    if batch is None:
        return FileName(folder, name, name, False)
    return FileName(folder, batch["base"], name, batch["dated"] is None)


def unite(con: duckdb.DuckDBPyConnection, result: Interpretation, infos: list[TableInfo],
          decisions: Mapping[str, str], say: Progress) -> Grouping:
    """Find the file groups of `result` and apply what they call for, in place: a union replaces its
    members in `result.sources` and `infos`, a question adds its issue; `result.file_groups` lists all."""
    grouping = Grouping()
    by_name = {i.source.name: i for i in infos}
    per_path = Counter(s.path for s in result.sources)
    groups: dict[tuple[str, str], list[Source]] = {}
    for src in result.sources:
        if src.name in by_name and per_path[src.path] == 1 and _eligible(src):
            named = file_name(src.path)
            groups.setdefault((named.folder, named.table), []).append(src)
    groups = {k: sorted(v, key=lambda s: s.path) for k, v in groups.items() if len(v) > 1}
    members = {s.name for group in groups.values() for s in group}
    taken = {s.name for s in result.sources if s.name not in members}
    for index, ((_folder, base), group) in enumerate(groups.items()):
        name = _free(snake_case(base) if snake_case(base) not in taken else group[0].name, taken)
        taken.add(name)
        files = [s.path for s in group]
        decision = decisions.get(name)
        verdict, why = judge(group)
        names = [s.name for s in group]
        numbered = any(file_name(s.path).numbered for s in group)
        if decision is None and numbered and verdict != "disjoint":
            why = f"numbered names, {why}: as likely several tables as batches of one"
        if decision == "separate" or (decision is None and (verdict == "disjoint" or numbered)):
            reason = f"kept apart by the expert (files: separate; {why})" if decision else why
            result.file_groups.append(FileGroup(name=name, files=files, sources=names, status="separate", reason=reason))
            if verdict != "disjoint":
                grouping.apart |= _pairs(names)
                result.quality_issues.append(QualityIssue(
                    source=name, kind="files_kept_separate", severity="info", count=len(group),
                    message=f"{', '.join(files)}: read as the separate sources {', '.join(names)} ({reason}); no "
                    "foreign key is inferred between them",
                    suggested_action=f"Set files: union for {name} in the overrides to read them as one table (or "
                    "declare a foreign key between them there, if one refers to the other)."))
            continue
        if decision == "union" or verdict == "same":
            say(f"    {', '.join(files)}: one table {name!r} ({'files: union' if decision else why})")
            try:
                source, issues, info = _unite_group(con, name, group, by_name, index)
            except Exception as exc:  # noqa: BLE001 - the files stay apart, and the build is not accepted
                log.debug("uniting %s failed", files, exc_info=True)
                con.execute(f"DROP TABLE IF EXISTS {quote_ident(f'union_{index}')}")
                why = f"their union could not be made: {type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}"
            else:
                _replace(result, infos, group, source, issues, info)
                grouping.united |= set(names)
                reason = f"united by the expert (files: union; {why})" if decision else why
                result.file_groups.append(FileGroup(name=name, files=files, sources=[name], status="united",
                                                    reason=reason))
                continue
        grouping.apart |= _pairs(names)
        result.file_groups.append(FileGroup(name=name, files=files, sources=names, status="question", reason=why))
        result.quality_issues.append(QualityIssue(
            source=name, kind="one_table_question", severity="error", count=len(group),
            examples=[f"{s.path}: {', '.join(c.name for c in s.columns)}" for s in group],
            message=f"{', '.join(files)} may be one table ({why}): read as the separate sources "
            f"{', '.join(names)}, and the build is not accepted, until the expert decides",
            suggested_action=f"In the overrides, set tables: {name}: files: union (one table {name!r}; a column "
            "a file lacks is NULL in its rows) or files: separate (separate tables, as read now)."))
    return grouping


def _eligible(src: Source) -> bool:
    """A file read cleanly as one source of its own, with no schema file deciding what it is."""
    return src.parent is None and src.parse.ok and bool(src.columns) and src.declared is None and not src.files


def _free(name: str, taken: set[str]) -> str:
    out, n = name, 1
    while out in taken:
        n += 1
        out = f"{name}_{n}"
    return out


def _pairs(names: list[str]) -> set[frozenset[str]]:
    return {frozenset((a, b)) for i, a in enumerate(names) for b in names[i + 1:]}


def _family(inferred: str) -> str:
    """Types that one column of a union may mix: numbers, dates and timestamps, or one exact type."""
    t = inferred.upper().split("(")[0].strip()
    if t in ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
             "UBIGINT", "DECIMAL", "NUMERIC", "DOUBLE", "FLOAT", "REAL"):
        return "number"
    if t.startswith(("DATE", "TIMESTAMP")):
        return "date"
    return t


def judge(group: list[Source]) -> tuple[str, str]:
    """(verdict, why): `same` columns and compatible types, `types` that disagree, columns that
    differ for a same-named file or overlap by QUESTION_OVERLAP (`partial`), or `disjoint`."""
    sets = [{c.name for c in s.columns} for s in group]
    if all(cols == sets[0] for cols in sets):
        clashes = []
        for col in group[0].columns:
            seen = {}
            for src in group:
                c = src.column(col.name)
                if c.distinct_count:  # a column NULL throughout has no type to disagree with
                    seen.setdefault(_family(c.inferred_type), (src.path, c.inferred_type))
            if len(seen) > 1:
                clashes.append(f"{col.name} is " + " and ".join(f"{t} in {p}" for p, t in seen.values()))
        if not clashes:
            return "same", f"the same {len(sets[0])} columns"
        return "types", "the same columns, but " + "; ".join(clashes[:3])
    common = set.intersection(*sets)
    only = [f"only in {s.path}: {', '.join(sorted(cols - common)) or '-'}" for s, cols in zip(group, sets, strict=True)]
    stems = Counter(file_name(s.path).name for s in group)
    if max(stems.values()) > 1:
        return "partial", "the same name, other columns: " + "; ".join(only)
    if len(common) >= QUESTION_OVERLAP * min(len(cols) for cols in sets):
        return "partial", f"{len(common)} columns in common; " + "; ".join(only)
    return "disjoint", f"names of batches, but {len(common)} column(s) in common"


def _unite_group(con: duckdb.DuckDBPyConnection, name: str, group: list[Source], by_name: dict[str, TableInfo],
                 index: int) -> tuple[Source, list[QualityIssue], TableInfo]:
    """The union of the group's tables, profiled, as one source with its files."""
    tables = [by_name[s.name].table for s in group]
    table = f"union_{index}"
    counts = _union_table(con, tables, table)
    profile = profile_table(con, table)
    identity = row_identity(profile.columns)
    profile.duplicate_rows = profile.rows - int(con.execute(
        f"SELECT count(DISTINCT hash({identity})) FROM {quote_ident(table)}").fetchone()[0])
    originals: dict[str, str] = {}
    for src in group:
        for c in src.columns:
            originals.setdefault(c.name, c.original_name)
    for col in profile.columns:
        col.original_name = originals.get(col.name, col.name)
    files = [SourceFile(path=s.path, format=s.format, sheet=s.parse.sheet, content_hash=s.content_hash,
                        size_bytes=s.size_bytes, row_count=n, bad_rows=s.parse.bad_rows,
                        records=s.parse.records, columns=[c.name for c in s.columns])
             for s, n in zip(group, counts, strict=True)]
    source = Source(
        name=name, path=group[0].path, format=group[0].format, content_hash=combined_hash(files),
        size_bytes=sum(f.size_bytes for f in files), row_count=profile.rows, files=files, parse=_parse(group),
        columns=profile.columns, duplicate_rows=profile.duplicate_rows,
    )
    issues = quality.column_issues(con, source, table, profile)
    issues.append(QualityIssue(
        source=name, kind="files_united", severity="info", count=len(files),
        examples=[f"{f.path}: {f.row_count} rows" for f in files],
        message=f"{', '.join(f.path for f in files)}: read as one source {name!r}, the union of their "
        f"{profile.rows} rows; each record keeps its file and row number (staging _source_file, _source_row)",
        suggested_action=f"Set files: separate for {name} in the overrides to load the files as separate tables."))
    copies = _copies_across(con, table, identity, counts)
    if any(copies):
        later = [f"{f.path}: {n}" for f, n in zip(files, copies, strict=True) if n]
        issues.append(QualityIssue(
            source=name, kind="duplicate_rows_across_files", count=sum(copies), examples=later,
            message=f"{sum(copies)} row(s) of {name} are exact copies of a row in an earlier file "
            f"({'; '.join(later)}): the files overlap",
            suggested_action="Exact copies are loaded once (dedup: exact_rows; staging keeps every copy with its "
            "file). Set dedup: none in the overrides to keep every copy, or files: separate to keep the files apart."))
    for t in tables:  # only now: until the union is profiled, the files may have to stay apart
        forget_read(con, t)
    return source, issues, TableInfo(source, table)


def _union_table(con: duckdb.DuckDBPyConnection, tables: list[str], union: str) -> list[int]:
    """Create `union`: the rows of `tables` in order (rowid order is file, then row), matched by column
    name (NULL where a table lacks one); a column whose types differ is read as text. Returns each
    table's row count."""
    described = [dict((r[0], r[1]) for r in con.execute(f"DESCRIBE {quote_ident(t)}").fetchall()) for t in tables]
    columns: dict[str, set[str]] = {}
    for cols in described:
        for col, typ in cols.items():
            columns.setdefault(col, set()).add(typ)
    types = {c: next(iter(ts)) if len(ts) == 1 else "VARCHAR" for c, ts in columns.items()}
    counts = []
    for i, (t, cols) in enumerate(zip(tables, described, strict=True)):
        select = ", ".join(
            f"CAST({quote_ident(c) if c in cols else 'NULL'} AS {types[c]}) AS {quote_ident(c)}" for c in columns)
        head = f"CREATE TABLE {quote_ident(union)} AS" if i == 0 else f"INSERT INTO {quote_ident(union)}"
        con.execute(f"{head} SELECT {select} FROM {quote_ident(t)}").fetchall()
        counts.append(int(con.execute(f"SELECT count(*) FROM {quote_ident(t)}").fetchone()[0]))
    return counts


def row_identity(columns: list[Column]) -> str:
    """What makes two rows copies, as SQL arguments: each value as its type parses it (text that
    does not parse, as written)."""
    out = []
    for col in columns:
        raw = f"CAST({quote_ident(col.name)} AS VARCHAR)"
        if col.physical_type.upper() == "VARCHAR" and col.inferred_type.upper() not in ("VARCHAR", "JSON"):
            parsed = parse_expression(present(quote_ident(col.name)), col.inferred_type, col.value_format)
            raw = f"coalesce(CAST({parsed} AS VARCHAR), {raw})"
        out.append(raw)
    return ", ".join(out)


def _copies_across(con: duckdb.DuckDBPyConnection, table: str, identity: str, counts: list[int]) -> list[int]:
    """Per file, its rows that are copies of a row of an earlier file (rowid ranges are files)."""
    bounds, total = [], 0
    for n in counts[:-1]:
        total += n
        bounds.append(total)
    which = "CASE " + " ".join(f"WHEN rowid < {b} THEN {i}" for i, b in enumerate(bounds)) + f" ELSE {len(bounds)} END"
    rows = dict(con.execute(
        f"WITH t AS (SELECT {which} AS f, hash({identity}) AS h "
        f"FROM {quote_ident(table)}), firsts AS (SELECT h, min(f) AS f0 FROM t GROUP BY h) "
        "SELECT t.f, count(*) FROM t JOIN firsts USING (h) WHERE t.f > firsts.f0 GROUP BY t.f").fetchall())
    return [int(rows.get(i, 0)) for i in range(len(counts))]


def combined_hash(files: list[SourceFile]) -> str:
    """A source's content hash over its files: any file changed, added or removed changes it."""
    digest = hashlib.sha256()
    for f in files:
        digest.update(f"{f.path}\0{f.content_hash}\n".encode())
    return digest.hexdigest()


def _parse(group: list[Source]) -> ParseInfo:
    """The first file's reading, with every file's bad rows and errors."""
    parse = group[0].parse.model_copy(deep=True)
    parse.bad_rows = sum(s.parse.bad_rows for s in group)
    counted = [s.parse.records for s in group]
    parse.records = None if None in counted else sum(counted)
    parse.bad_row_examples = [e for s in group for e in s.parse.bad_row_examples][:10]
    parse.errors = [e for s in group for e in s.parse.errors]
    parse.rewritten = any(s.parse.rewritten for s in group)
    parse.confidence = min(s.parse.confidence for s in group)
    return parse


def _replace(result: Interpretation, infos: list[TableInfo], group: list[Source], source: Source,
             issues: list[QualityIssue], info: TableInfo) -> None:
    """The union takes its first member's place; the members' reading issues become its own."""
    names = {s.name for s in group}
    at = next(i for i, s in enumerate(result.sources) if s.name in names)
    result.sources = [s for s in result.sources if s.name not in names]
    result.sources.insert(at, source)
    at = next(i for i, x in enumerate(infos) if x.source.name in names)
    infos[:] = [x for x in infos if x.source.name not in names]
    infos.insert(at, info)
    kept = []
    for issue in result.quality_issues:
        if issue.source in names:
            if issue.kind in REPLACED_KINDS:
                continue
            issue.source = source.name
        kept.append(issue)
    result.quality_issues = kept + issues
