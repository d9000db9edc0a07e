"""Read each raw file into DuckDB, once, reporting every problem by file.

A reader never raises for bad input: it returns a `LoadedSource` whose `parse.errors`
say what is wrong, so one bad file never stops the others.
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import re
import tempfile
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime, time
from decimal import Decimal
from pathlib import Path
from xml.etree import ElementTree

import duckdb
import pyarrow as pa

from dia_assets.contracts.interpretation import DeclaredTable, ParseInfo, QualityIssue, SourceRef
from dia_assets.platform.files.compressed import DecompressError, compression, decompress
from dia_assets.platform.files.csv_lines import (
    UNCLOSED,
    load_by_lines,
    needs_line_reader,
    sniff_failed,
)
from dia_assets.platform.files.csv_prepare import NotText, Prepared, final_names, prepare_csv
from dia_assets.platform.files.declared import declared_for
from dia_assets.platform.files.discover import TextScan, scan_text
from dia_assets.platform.files.encodings import Detection, legacy_encoding
from dia_assets.platform.files.excel_formulas import formula_issues, unvalued_formulas
from dia_assets.platform.files.final_record import REASON, cut_issue, set_aside
from dia_assets.platform.files.json_keys import (
    DuplicateKeys,
    document_duplicates,
    duplicate_issue,
    loads_noting_repeats,
)
from dia_assets.platform.files.parse_checks import (
    confidence,
    encoding_issues,
    reading_issues,
    verify_counts,
)
from dia_assets.platform.files.record_count import count_records
from dia_assets.platform.files.rewrite import (
    TextStats,
    bom_encoding,
    decode_line,
    rewrite_text,
    stats_for,
)
from dia_assets.platform.files.temp import temp_prefix
from dia_assets.platform.naming import quote_ident, snake_case, sql_str, unique_names
from dia_assets.platform.settings import get_settings

# DuckDB keeps a whole line in one buffer. The first read leaves `max_line_size` unset: any
# line that fits the buffer is read, and an ordered read runs at the speed of an unordered one
# (measured, DuckDB 2.0.1, 10M rows under a 1GB limit: 4.7 s, against 6.7-8.5 s with
# `max_line_size` set to the 2,000,000 bytes DuckDB assumes anyway). The buffer is
# max(DIA_CSV_BUFFER, 2 x the longest record), the longest found by the record count before the
# read; a file DuckDB still finds a longer line in is read again with an explicit limit.
FIRST_BUFFER = 32_000_000
HUGE_MAX_LINE = 512_000_000


def record_too_long(name: str, file: str, longest: int, line: int, limit: int) -> QualityIssue:
    """A record longer than DIA_CSV_MAX_RECORD: refused by line rather than a read that fails or
    a buffer that takes the machine's memory."""
    return QualityIssue(
        source=name, kind="record_too_long", severity="error", blocking=True, count=1,
        examples=[f"line {line}: {longest:,} bytes"],
        message=f"{file}: the record starting on line {line} is {longest:,} bytes long, over the "
        f"{limit:,} bytes a record may have (DIA_CSV_MAX_RECORD); the file is not read",
        suggested_action="Check that line (an unclosed quote joins every line after it into one record); "
        "raise DIA_CSV_MAX_RECORD if the record is real.",
    )


def records_lost(name: str, file: str, records: int, rows: int, bad: int) -> QualityIssue:
    """Records counted in the file that are neither rows nor rejected lines: never accepted."""
    return QualityIssue(
        source=name, kind="records_lost", severity="error", blocking=True, count=abs(records - rows - bad),
        message=f"{file}: {records} records in the file, but {rows} rows read + {bad} rejected lines = "
        f"{rows + bad}: {records - rows - bad} record(s) unaccounted for",
        suggested_action="Check the file's quoting and line ends near the lines the reader rejected; "
        "report the file if it is well formed.",
    )


@dataclass
class LoadedSource:
    name: str
    path: Path
    format: str
    table: str | None
    parse: ParseInfo
    original_columns: list[str] = field(default_factory=list)
    parent: SourceRef | None = None
    issues: list[QualityIssue] = field(default_factory=list)
    declared: DeclaredTable | None = None
    read_path: Path | None = None  # the plain copy read in place of `path` (a compressed file's)

    def fail(self, message: str) -> LoadedSource:
        self.parse.ok = False
        self.parse.errors.append(message)
        self.issues.append(
            QualityIssue(
                source=self.name, kind="unreadable_file", severity="error",
                message=f"{self.path.name}: {message}",
                suggested_action="Fix or re-export the file; other sources are unaffected.",
            )
        )
        self.table = None
        return self


# ---------------------------------------------------------------- encodings


@dataclass
class TextFile:
    path: Path  # UTF-8 (possibly a transcoded copy)
    encoding: str


def detect_encoding(path: Path, utf8_ok: bool | None = None) -> tuple[str, Detection | None]:
    """A BOM's encoding; else utf-8 when every byte decodes; else the legacy encoding a schema
    file declares or detection finds (with how sure it is). `utf8_ok` is the answer from a read
    the caller already made (hashing); only a file that is not UTF-8 pays for detection."""
    bom = bom_encoding(path)
    if bom:
        return bom, None
    if utf8_ok is None:
        utf8_ok = scan_text(path).utf8
    if utf8_ok:
        return "utf-8", None
    detection = legacy_encoding(path, declared_for(path))
    return detection.encoding, detection


def as_utf8(path: Path, encoding: str, scratch: Path) -> Path:
    """DuckDB reads UTF-8; other encodings are streamed into a UTF-8 copy."""
    if encoding == "utf-8":
        return path
    target = scratch / f"{path.stem}.utf8{path.suffix}"
    with path.open("r", encoding=encoding, newline="") as src, target.open(
        "w", encoding="utf-8", newline=""
    ) as dst:
        while block := src.read(1 << 20):
            dst.write(block)
    return target


def looks_binary(path: Path) -> int | None:
    """Offset of the first NUL byte in the head of a non-UTF-16 file, if any."""
    with path.open("rb") as fh:
        head = fh.read(1 << 16)
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None
    pos = head.find(b"\x00")
    return pos if pos >= 0 else None


# ---------------------------------------------------------------- CSV


def read_csv_source(
    con: duckdb.DuckDBPyConnection, path: Path, name: str, table: str, scratch: Path,
    scan: TextScan | None = None, origin: Path | None = None,
) -> LoadedSource:
    """`origin`: the file the user has, when `path` is its plain copy (a compressed file's)."""
    loaded = LoadedSource(name=name, path=origin or path, format="csv", table=table, parse=ParseInfo(),
                          read_path=path if origin else None)
    file = loaded.path.name
    size = path.stat().st_size
    if size == 0:
        return loaded.fail("empty file (0 bytes): no header and no rows")
    try:
        prep = prepare_csv(path, scratch, scan, lambda p, enc: as_utf8(p, enc, scratch), origin)
    except NotText as exc:
        return loaded.fail(str(exc))
    header = prep.header.header
    loaded.parse.encoding = prep.encoding
    loaded.parse.delimiter = prep.dialect.delimiter
    loaded.parse.record_terminator = prep.dialect.terminator
    loaded.parse.quote = '"' if prep.dialect.standard else None  # bulk-copy files do not quote
    loaded.parse.header = header
    loaded.parse.rewritten = prep.rewritten
    loaded.parse.confidence = confidence(prep)
    if prep.detection is not None and prep.text.fallback_lines:
        loaded.parse.encoding_confidence = prep.detection.confidence
    loaded.declared = prep.declared
    raw_names = prep.raw_names
    text_path, delim = prep.path, prep.delimiter
    dupes = [n for n, c in Counter(cell.strip() for cell in raw_names if cell.strip()).items() if c > 1]
    if dupes:
        loaded.issues.append(
            QualityIssue(
                source=name, kind="duplicate_column_names", severity="warning",
                count=len(dupes), examples=dupes,
                message=f"{file}: header repeats column name(s) {', '.join(map(repr, dupes))}; "
                "later copies were renamed with a numeric suffix",
                suggested_action="Rename the columns in the overrides or fix the export.",
            )
        )
    names, empty_labels = final_names(raw_names)
    loaded.original_columns = [cell.strip() or names[i] for i, cell in enumerate(raw_names)]
    loaded.issues.extend(reading_issues(prep, name, file, empty_labels))
    rejects = f"{table}__rejects"
    options = {
        "delim": delim, "quote": '"', "escape": '"', "header": header,
        "all_varchar": True, "allow_quoted_nulls": False,
        "names": names, "store_rejects": True,
        "rejects_table": rejects, "rejects_scan": f"{table}__scan",
    }
    settings = get_settings()
    limit = int(settings.csv_max_record)
    counted = count_records(text_path, delim, len(names), limit)
    if counted.longest > limit:
        loaded.issues.append(record_too_long(name, file, counted.longest, counted.longest_line, limit))
        loaded.parse.ok = False
        loaded.parse.errors.append(loaded.issues[-1].message.removeprefix(f"{file}: "))
        loaded.table = None
        return loaded
    buffer = max(int(settings.csv_buffer), 2 * counted.longest + 2)
    huge_line = min(max(HUGE_MAX_LINE, limit), max(buffer, size + 1))
    for attempt in ({"buffer_size": buffer}, {"max_line_size": huge_line, "buffer_size": 2 * huge_line}):
        opts = dict(options, **attempt)
        try:
            con.execute(
                f"CREATE OR REPLACE TABLE {quote_ident(table)} AS "
                f"SELECT * FROM read_csv(?, {csv_options_sql(opts)})",
                [str(text_path)],
            )
        except duckdb.Error as exc:
            if sniff_failed(exc):  # typically an unclosed quote: read what can be read, line by line
                return keep_cut(con, read_by_lines(con, loaded, text_path, table, names, delim, header), prep)
            if "maximum line size" in str(exc).lower() and "max_line_size" not in attempt:
                continue
            return loaded.fail(f"cannot parse as CSV: {_first_line(exc)}")
        too_long = con.execute(
            f"SELECT count(*) FROM {quote_ident(rejects)} WHERE error_type = 'LINE SIZE OVER MAXIMUM'"
        ).fetchall()[0][0]
        if not too_long:
            break
        con.execute(f"DELETE FROM {quote_ident(rejects)}")  # retried with room for huge fields
    if needs_line_reader(con, rejects):  # an unclosed quote swallowed the lines after it
        return keep_cut(con, read_by_lines(con, loaded, text_path, table, names, delim, header), prep)
    bad = con.execute(  # one line can carry several errors
        f"SELECT count(DISTINCT line) FROM {quote_ident(rejects)}"
    ).fetchall()[0][0]
    if bad:
        examples = con.execute(
            f"SELECT 'line ' || line || ': ' || string_agg(error_message, '; ' ORDER BY byte_position, column_idx, "
            f"error_message) FROM {quote_ident(rejects)} "
            "GROUP BY line ORDER BY line LIMIT 5"
        ).fetchall()
        loaded.parse.bad_rows = bad
        loaded.parse.bad_row_examples = [e[0] for e in examples]
        loaded.issues.append(
            QualityIssue(
                source=name, kind="ragged_rows", severity="warning", count=bad,
                examples=loaded.parse.bad_row_examples,
                message=f"{file}: {bad} line(s) do not have {len(names)} fields",
                suggested_action="Route these lines to the reject table; fix the export if they matter.",
            )
        )
    rows = con.execute(f"SELECT count(*) FROM {quote_ident(table)}").fetchall()[0][0]
    loaded.issues.extend(verify_counts(prep, name, file, rows, bad))
    records = counted.records - (1 if header and counted.records else 0)
    loaded.parse.records = records + (1 if prep.cut is not None else 0)  # the cut record is rejected below
    if rows + bad != records:
        loaded.issues.append(records_lost(name, file, records, rows, bad))
    if header and rows == 0:
        loaded.issues.append(
            QualityIssue(
                source=name, kind="header_only", severity="info",
                message=f"{file}: header only, no data rows",
                suggested_action="Keep the table; keys are inferred from column names alone.",
            )
        )
    return keep_cut(con, loaded, prep)


def keep_cut(con: duckdb.DuckDBPyConnection, loaded: LoadedSource, prep: Prepared) -> LoadedSource:
    """A record cut short at the end of the file (read without it) joins the rejected lines."""
    if prep.cut is None or not loaded.table:
        return loaded
    set_aside(con, f"{loaded.table}__rejects", prep.cut)
    loaded.parse.bad_rows += 1
    loaded.parse.bad_row_examples.append(f"line {prep.cut.line}: {REASON}: {prep.cut.text[:80]}")
    loaded.issues.append(cut_issue(loaded.name, loaded.path.name, prep.cut.line, prep.cut.text))
    return loaded


def read_by_lines(
    con: duckdb.DuckDBPyConnection, loaded: LoadedSource, text_path: Path, table: str, names: list[str],
    delim: str, header: bool,
) -> LoadedSource:
    """The readable records of a file DuckDB cannot split; every other line goes to rejects."""
    if len(delim) != 1:
        return loaded.fail(f"cannot split into records (unbalanced quotes?) and the line-by-line reader "
                           f"takes one-character delimiters only, not {delim!r}")
    rows, bad = load_by_lines(con, text_path, table, f"{table}__rejects", names, delim, header)
    name, path = loaded.name, loaded.path
    loaded.parse.bad_rows = len(bad)
    loaded.parse.bad_row_examples = [f"line {b.line}: {b.reason}: {b.text[:80]}" for b in bad[:5]]
    unclosed = [b for b in bad if b.reason == UNCLOSED]
    if not rows and not header:
        return loaded.fail(f"no readable record: {loaded.parse.bad_row_examples[0] if bad else 'empty'}")
    what = (f"a quote opened on line {unclosed[0].line} is never closed" if unclosed
            else "its quoting does not follow the CSV rules")
    loaded.issues.append(QualityIssue(
        source=name, kind="malformed_csv", severity="warning", count=len(bad),
        examples=loaded.parse.bad_row_examples,
        message=f"{path.name}: {what}; read line by line: {rows} row(s) loaded, {len(bad)} line(s) "
        "that cannot be split into fields go to the reject table with their raw text",
        suggested_action="Fix the quoting in the export if these lines matter; the other rows are unaffected.",
    ))
    return loaded


def _first_line(exc: Exception) -> str:
    """DuckDB errors run to dozens of lines; the first one (plus its reason) is the message."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    reason = next((line for line in lines[1:] if "exceeded" in line or "Expected" in line), "")
    return (lines[0] if lines else type(exc).__name__) + (f" ({reason[:200]})" if reason else "")


def csv_options_sql(opts: dict[str, object]) -> str:
    def literal(value: object) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, list):
            return "[" + ", ".join(literal(v) for v in value) + "]"
        return "'" + str(value).replace("'", "''") + "'"

    return ", ".join(f"{key}={literal(value)}" for key, value in opts.items())


# ---------------------------------------------------------------- JSON / nested


def read_json_source(
    con: duckdb.DuckDBPyConnection, path: Path, name: str, table: str, fmt: str,
    scratch: Path, scan: TextScan | None = None, origin: Path | None = None,
) -> list[LoadedSource]:
    """JSON or JSON Lines in any encoding the CSV path reads; transcoded copies go to `scratch`.
    `origin`: the file the user has, when `path` is its plain copy (a compressed file's)."""
    loaded = LoadedSource(name=name, path=origin or path, format=fmt, table=table, parse=ParseInfo(),
                          read_path=path if origin else None)
    file = loaded.path.name
    if path.stat().st_size == 0:
        return [loaded.fail("empty file (0 bytes)")]
    nul = looks_binary(path)
    if nul is not None:
        return [loaded.fail(f"binary content, not JSON (NUL byte at offset {nul})")]
    # DuckDB reads JSON as UTF-8 only: any other encoding would turn lines into all-NULL rows.
    encoding, detection = detect_encoding(path, scan.utf8 if scan else None)
    text_path = path
    if detection is not None:  # line by line, as CSV: the UTF-8 lines of a mixed file stay UTF-8
        stats = TextStats(fallback=encoding)
        text_path = rewrite_text(path, scratch / f"{path.stem}.utf8{path.suffix}", stats, b"\n")
        encoding = stats.encoding()
        loaded.parse.encoding_confidence = detection.confidence
        loaded.issues.extend(encoding_issues(detection, name, file))
    elif encoding != "utf-8":
        text_path = as_utf8(path, encoding, scratch)
    loaded.parse.encoding = encoding
    if fmt == "jsonl":
        check = _check_json_lines(text_path)
        bad, examples, repeats = check.bad, check.examples, check.repeats
        if check.cut:
            loaded.issues.append(cut_issue(name, file, *check.cut))
        if bad:  # DuckDB reads the other lines only: one array or string line would make it
            # read every line as a JSON value, and a broken line would become an all-NULL row
            text_path = _objects_only(text_path, scratch)
            loaded.parse.bad_rows = bad
            loaded.parse.bad_row_examples = examples
            loaded.issues.append(
                QualityIssue(
                    source=name, kind="malformed_records", severity="warning", count=bad,
                    examples=examples,
                    message=f"{file}: {bad} line(s) are not valid JSON objects",
                    suggested_action="Route these lines to the reject table; fix the export if they matter.",
                )
            )
    else:
        repeats = document_duplicates(text_path)
    if repeats.records:
        loaded.issues.append(duplicate_issue(name, file, repeats))
    json_format = "newline_delimited" if fmt == "jsonl" else "auto"
    raw = f"{table}__raw"
    options = (f"format='{json_format}', ignore_errors=true, maximum_object_size=536870912, "
               "sample_size=-1")
    try:
        con.execute(
            f"CREATE OR REPLACE TABLE {quote_ident(raw)} AS SELECT * FROM read_json(?, {options})",
            [str(text_path)],
        )
        exact = exact_number_columns(con, raw)
        if exact:  # read again with every JSON number that DuckDB would round kept as its text
            con.execute(
                f"CREATE OR REPLACE TABLE {quote_ident(raw)} AS SELECT * FROM read_json(?, {options}, "
                f"columns={exact})",
                [str(text_path)],
            )
    except duckdb.Error as exc:
        return [loaded.fail(f"cannot parse as JSON: {str(exc).splitlines()[0]}")]
    rows = con.execute(f"SELECT count(*) FROM {quote_ident(raw)}").fetchall()[0][0]
    if rows == 0 and not loaded.parse.bad_rows:
        return [loaded.fail("no JSON records found")]
    return flatten(con, loaded, raw)


_FLOAT_TYPE = re.compile(r"\b(DOUBLE|FLOAT|REAL)\b")


def exact_number_columns(con: duckdb.DuckDBPyConnection, raw: str) -> str | None:
    """A `columns=` struct for read_json with floating types replaced by VARCHAR, or None.

    DuckDB reads an integer beyond 64 bits (or any fraction) as DOUBLE, which rounds: two
    distinct ids can collapse into one. As text every number stays exact; the profiler
    then infers HUGEINT or DECIMAL from the text, as it does for CSV."""
    described = con.execute(f"DESCRIBE {quote_ident(raw)}").fetchall()
    if not any(_FLOAT_TYPE.search(str(row[1])) for row in described):
        return None
    fields = ", ".join(
        f"{sql_str(str(row[0]))}: {sql_str(_FLOAT_TYPE.sub('VARCHAR', str(row[1])))}" for row in described
    )
    return "{" + fields + "}"


def _objects_only(path: Path, scratch: Path) -> Path:
    """A copy of a JSON Lines file with every line that is not a JSON object blanked."""
    target = scratch / f"{path.stem}.objects{path.suffix}"
    with path.open("r", encoding="utf-8", errors="replace", newline="") as src, target.open(
        "w", encoding="utf-8", newline=""
    ) as out:
        for line in _split_lines(src):
            out.write(line if not line.strip() or _is_json_object(line) else "\n")
    return target


def bad_json_lines(path: Path, encoding: str | None = "utf-8") -> Iterator[tuple[int, str]]:
    """(line number, text) of every non-blank line that is not a JSON object."""
    for number, line in _json_lines(path, encoding):
        if not _is_json_object(line):
            yield number, line.rstrip("\r\n")


def _json_lines(path: Path, encoding: str | None) -> Iterator[tuple[int, str]]:
    """(line number, text) of every non-blank line, decoded as the reader recorded it
    (`parse.encoding`: a BOM's encoding, utf-8, or a legacy one line by line)."""
    if encoding and not encoding.startswith("utf"):
        stats = stats_for(encoding)
        with path.open("rb") as fh:
            for number, raw in enumerate(_split_raw_lines(fh), start=1):
                line = decode_line(raw, stats, number)
                if line.strip():
                    yield number, line
        return
    with path.open("r", encoding=encoding or "utf-8", errors="replace", newline="") as fh:
        for number, line in enumerate(_split_lines(fh), start=1):
            if line.strip():
                yield number, line


def _split_raw_lines(fh: io.BufferedIOBase) -> Iterator[bytes]:
    """Byte lines split on \n, each with its \n; no legacy encoding has that byte in a character."""
    rest = b""
    while block := fh.read(1 << 20):
        parts = (rest + block).split(b"\n")
        rest = parts.pop()
        yield from (p + b"\n" for p in parts)
    if rest:
        yield rest


def _split_lines(fh: io.TextIOBase) -> Iterator[str]:
    """Lines split on \\n only (JSON Lines' terminator), so a stray \\r stays inside its line."""
    rest = ""
    while block := fh.read(1 << 20):
        parts = (rest + block).split("\n")
        rest = parts.pop()
        yield from (p + "\n" for p in parts)
    if rest:
        yield rest


def _is_json_object(line: str) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


@dataclass
class JsonLinesCheck:
    """One pass over JSON Lines: lines that are not objects, objects that give a key twice, and a
    last line cut short (no line end, and not JSON: the file was read while being written)."""

    bad: int = 0
    examples: list[str] = field(default_factory=list)
    repeats: DuplicateKeys = field(default_factory=DuplicateKeys)
    cut: tuple[int, str] | None = None


def _check_json_lines(path: Path, limit: int = 5) -> JsonLinesCheck:
    out = JsonLinesCheck()
    last: tuple[int, str, bool] | None = None
    for number, line in _json_lines(path, "utf-8"):
        try:
            value, repeated = loads_noting_repeats(line)
        except ValueError:
            value, repeated = None, []
        last = (number, line, isinstance(value, dict))
        if not isinstance(value, dict):
            out.bad += 1
            if len(out.examples) < limit:
                out.examples.append(f"line {number}: {line.strip()[:80]}")
        elif repeated:
            out.repeats.add(f"line {number}", repeated)
    if last is not None and not last[2] and not last[1].endswith("\n") and last[0] > 1:
        out.cut = (last[0], last[1].strip())
    return out


def _struct_fields(type_str: str) -> bool:
    return type_str.startswith("STRUCT(")


def flatten(
    con: duckdb.DuckDBPyConnection, loaded: LoadedSource, raw: str, depth: int = 0
) -> list[LoadedSource]:
    """Expand nested objects into columns and nested arrays into child sources.

    A child `<parent>_<field>` carries the parent's key and an `ordinal` so every
    element keeps its place and its link.
    """
    columns = con.execute(f"DESCRIBE {quote_ident(raw)}").fetchall()
    scalar_exprs: list[tuple[str, str]] = []  # (sql expr, output name)
    lists: list[tuple[str, str, str]] = []  # (expr, field name, type)

    def walk(expr: str, prefix: str, type_str: str, level: int) -> None:
        if type_str.endswith("[]"):
            lists.append((expr, prefix, type_str))
        elif _struct_fields(type_str) and level < 4:
            for sub_name, sub_type in _struct_members(con, raw, expr):
                walk(f"{expr}.{quote_ident(sub_name)}", f"{prefix}_{sub_name}", sub_type, level + 1)
        elif type_str == "JSON":  # values of mixed kinds (`[1, 2, "x"]`): kept as their JSON text
            scalar_exprs.append((f"CAST({expr} AS VARCHAR)", prefix))
        else:
            scalar_exprs.append((expr, prefix))

    for col_name, col_type, *_ in columns:
        walk(quote_ident(col_name), col_name, col_type, 0)

    names = unique_names([n for _, n in scalar_exprs])
    loaded.original_columns = [n for _, n in scalar_exprs]
    select = ", ".join(f"{expr} AS {quote_ident(n)}" for (expr, _), n in zip(scalar_exprs, names, strict=True))
    key = _row_key(con, raw, scalar_exprs, names) if lists else None
    if lists and key is None:
        select = "row_number() OVER () AS row_no, " + select
        names = ["row_no", *names]
        key_expr, key_name = "row_number() OVER ()", "row_no"
    elif key is not None:
        key_expr, key_name = key
    table = loaded.table or raw
    con.execute(
        f"CREATE OR REPLACE TABLE {quote_ident(table)} AS SELECT {select or '1 AS _empty'} "
        f"FROM {quote_ident(raw)}"
    )
    out = [loaded]
    for expr, field_name, _type in lists:
        child_name = f"{loaded.name}_{snake_case(field_name)}"
        child_raw = f"{table}__{snake_case(field_name)}__raw"
        # Children in file order: by the parent's row (its position in `raw`, numbered as
        # `row_no` is) and the element's ordinal. DuckDB emits a lateral unnest in whatever
        # order its threads finish, and the profile's sample and deciles follow row order.
        con.execute(
            f"CREATE OR REPLACE TABLE {quote_ident(child_raw)} AS "
            f"SELECT p.k AS {quote_ident(key_name)}, u.ordinal, u.item FROM "
            f"(SELECT row_number() OVER () AS pos, {key_expr} AS k, {expr} AS arr FROM {quote_ident(raw)}) p, "
            f"unnest(p.arr) WITH ORDINALITY AS u(item, ordinal) ORDER BY p.pos, u.ordinal"
        )
        child = LoadedSource(
            name=child_name, path=loaded.path, format=loaded.format,
            table=f"{table}__{snake_case(field_name)}",
            parse=ParseInfo(encoding=loaded.parse.encoding, json_path=f"$.{field_name}[*]"),
            parent=SourceRef(source=loaded.name, columns=[key_name]),
        )
        item_type = con.execute(
            f"SELECT typeof(item) FROM {quote_ident(child_raw)} LIMIT 1"
        ).fetchall()
        if item_type and _struct_fields(item_type[0][0]):
            con.execute(
                f"CREATE OR REPLACE TABLE {quote_ident(child_raw)} AS SELECT "
                f"{quote_ident(key_name)}, ordinal, item.* FROM {quote_ident(child_raw)}"
            )
        else:
            con.execute(
                f"CREATE OR REPLACE TABLE {quote_ident(child_raw)} AS SELECT "
                f"{quote_ident(key_name)}, ordinal, item AS value FROM {quote_ident(child_raw)}"
            )
        out.extend(flatten(con, child, child_raw, depth + 1) if depth < 3 else [child])
    return out


def _struct_members(con: duckdb.DuckDBPyConnection, raw: str, expr: str) -> list[tuple[str, str]]:
    con.execute(f"CREATE OR REPLACE TEMP VIEW __probe AS SELECT {expr}.* FROM {quote_ident(raw)}")
    return [(row[0], row[1]) for row in con.execute("DESCRIBE __probe").fetchall()]


def _row_key(
    con: duckdb.DuckDBPyConnection, raw: str, exprs: list[tuple[str, str]], names: list[str]
) -> tuple[str, str] | None:
    """The parent column that identifies each record, to link children to it."""
    ranked = sorted(
        zip(exprs, names, strict=True),
        key=lambda pair: (not pair[1].endswith(("_id", "id", "_key", "_no", "_code")), names.index(pair[1])),
    )
    for (expr, _), name in ranked[:8]:
        unique, nulls = con.execute(
            f"SELECT count(DISTINCT {expr}) = count(*), count(*) FILTER ({expr} IS NULL) "
            f"FROM {quote_ident(raw)}"
        ).fetchall()[0]
        if unique and nulls == 0:
            return expr, name
    return None


# ---------------------------------------------------------------- Excel


def _cell_text(value: object) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        if value.time() == time(0):
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, date | time):
        return value.isoformat()
    if isinstance(value, float):
        return repr(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    if isinstance(value, Decimal):
        return format(value, "f")
    return str(value)


def find_header_row(rows: list[list[str | None]]) -> int:
    """Index of the header: the first row as wide as the table whose cells are all labels."""
    widths = [sum(cell is not None and str(cell).strip() != "" for cell in row) for row in rows]
    if not widths or max(widths) == 0:
        return 0
    full = max(widths)
    for index, width in enumerate(widths):
        if width >= max(2, int(full * 0.8)) or full == 1:
            return index
    return 0


def read_excel_sources(
    con: duckdb.DuckDBPyConnection, path: Path, stem_name: str, table_prefix: str
) -> list[LoadedSource]:
    base = LoadedSource(name=stem_name, path=path, format="excel", table=None, parse=ParseInfo())
    if path.stat().st_size == 0:
        return [base.fail("empty file (0 bytes)")]
    if path.suffix.lower() == ".xls":
        return [base.fail("legacy .xls workbooks are not supported; save it as .xlsx")]
    try:
        import openpyxl

        workbook = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError) as exc:
        return [base.fail(f"cannot read Excel workbook: {type(exc).__name__}: {exc}")]
    except Exception as exc:  # openpyxl raises its own types for corrupt parts
        return [base.fail(f"cannot read Excel workbook: {type(exc).__name__}: {exc}")]
    out: list[LoadedSource] = []
    try:
        unvalued = unvalued_formulas(path)
    except (zipfile.BadZipFile, KeyError, OSError, ValueError, ElementTree.ParseError) as exc:
        workbook.close()
        return [base.fail(f"cannot read the formulas of the Excel workbook: {type(exc).__name__}: {exc}")]
    try:
        for index, sheet in enumerate(workbook.worksheets):
            name = f"{stem_name}_{snake_case(sheet.title)}"
            loaded = LoadedSource(
                name=name, path=path, format="excel", table=f"{table_prefix}_{index}",
                parse=ParseInfo(sheet=sheet.title, encoding=None),
            )
            rows = [[_cell_text(v) for v in row] for row in sheet.iter_rows(values_only=True)]
            while rows and all(c is None or not str(c).strip() for c in rows[-1]):
                rows.pop()
            if not rows:
                loaded.issues.append(
                    QualityIssue(
                        source=name, kind="empty_sheet", severity="info",
                        message=f"{path.name}: sheet {sheet.title!r} is empty",
                        suggested_action="Nothing to load; ignore unless data was expected.",
                    )
                )
                continue
            header_index = find_header_row(rows[:30])
            header = rows[header_index]
            width = max(
                (i + 1 for row in rows[header_index:] for i, c in enumerate(row) if c is not None),
                default=0,
            )
            labels = [(h or f"column_{i + 1}").strip() for i, h in enumerate(header[:width])]
            labels += [f"column_{i + 1}" for i in range(len(labels), width)]
            loaded.parse.header_row = header_index + 1
            if header_index:
                loaded.issues.append(
                    QualityIssue(
                        source=name, kind="header_not_first_row", severity="info",
                        count=header_index,
                        examples=[str(c) for r in rows[:header_index] for c in r if c][:3],
                        message=f"{path.name}[{sheet.title}]: header found on row {header_index + 1}; "
                        f"{header_index} row(s) above it skipped",
                        suggested_action="None needed; the Schema Creator reads from the header row.",
                    )
                )
            dupes = [n for n, c in Counter(labels).items() if c > 1]
            if dupes:
                loaded.issues.append(
                    QualityIssue(
                        source=name, kind="duplicate_column_names", severity="warning",
                        count=len(dupes), examples=dupes,
                        message=f"{path.name}[{sheet.title}]: repeated column name(s) {dupes}",
                        suggested_action="Rename the columns in the overrides or fix the export.",
                    )
                )
            names = unique_names(labels)
            loaded.original_columns = labels
            loaded.issues.extend(formula_issues(name, path.name, sheet.title, unvalued.get(sheet.title, []),
                                                header_index + 1, names))
            body = [
                (row + [None] * width)[:width]
                for row in rows[header_index + 1 :]
                if any(c is not None and str(c).strip() for c in row)
            ]
            arrow = pa.table(
                {n: pa.array([r[i] for r in body], type=pa.string()) for i, n in enumerate(names)}
            )
            con.register("__sheet", arrow)
            con.execute(f"CREATE OR REPLACE TABLE {quote_ident(loaded.table)} AS SELECT * FROM __sheet")
            con.unregister("__sheet")
            out.append(loaded)
    finally:
        workbook.close()
    return out or [base.fail("workbook has no sheets with data")]


# ---------------------------------------------------------------- Parquet


def read_parquet_source(
    con: duckdb.DuckDBPyConnection, path: Path, name: str, table: str
) -> list[LoadedSource]:
    loaded = LoadedSource(name=name, path=path, format="parquet", table=table, parse=ParseInfo())
    if path.stat().st_size == 0:
        return [loaded.fail("empty file (0 bytes)")]
    raw = f"{table}__raw"
    try:
        con.execute(
            f"CREATE OR REPLACE VIEW {quote_ident(raw)} AS SELECT * FROM read_parquet({sql_str(str(path))})"
        )
        con.execute(f"SELECT count(*) FROM {quote_ident(raw)}").fetchall()
    except duckdb.Error as exc:
        return [loaded.fail(f"cannot read Parquet: {str(exc).splitlines()[0]}")]
    return flatten(con, loaded, raw)


def read_source(
    con: duckdb.DuckDBPyConnection, path: Path, fmt: str, name: str, table: str, scratch: Path,
    scan: TextScan | None = None,
) -> list[LoadedSource]:
    """Dispatch on format; always returns at least one entry naming the file."""
    try:
        if compression(path):
            return read_compressed(con, path, fmt, name, table, scratch)
        if fmt == "csv":
            return [read_csv_source(con, path, name, table, scratch, scan)]
        if fmt in ("json", "jsonl"):
            return read_json_source(con, path, name, table, fmt, scratch, scan)
        if fmt == "excel":
            return read_excel_sources(con, path, name, table)
        if fmt == "parquet":
            return read_parquet_source(con, path, name, table)
    except (duckdb.Error, OSError, UnicodeError, csv.Error) as exc:
        loaded = LoadedSource(name=name, path=path, format=fmt, table=None, parse=ParseInfo())
        return [loaded.fail(f"{type(exc).__name__}: {str(exc).splitlines()[0]}")]
    raise ValueError(f"unknown format {fmt}")


def read_compressed(
    con: duckdb.DuckDBPyConnection, path: Path, fmt: str, name: str, table: str, scratch: Path
) -> list[LoadedSource]:
    """A gzip or zstd file, read as the CSV or JSON it holds (its plain copy goes to `scratch`)."""
    try:
        plain = decompress(path, scratch)
    except DecompressError as exc:
        return [LoadedSource(name=name, path=path, format=fmt, table=None, parse=ParseInfo()).fail(str(exc))]
    if fmt == "csv":
        return [read_csv_source(con, plain, name, table, scratch, origin=path)]
    return read_json_source(con, plain, name, table, fmt, scratch, origin=path)


def scratch_dir() -> tempfile.TemporaryDirectory[str]:
    return tempfile.TemporaryDirectory(prefix=temp_prefix("dia-interpret-"))
