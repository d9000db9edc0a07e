"""Everything decided about a delimited file before DuckDB reads it: encoding, dialect, header.

Deterministic from the file's bytes (and a schema file beside it), so the Schema Creator's loader
re-derives the same decisions. Ordinary UTF-8 comma files cost one 64 KiB sample and no rewrite.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dia_assets.contracts.interpretation import DeclaredColumn
from dia_assets.platform.files import header as headers
from dia_assets.platform.files.declared import DeclaredTable, declared_for
from dia_assets.platform.files.dialect import Dialect, measure, newline_of, sniff
from dia_assets.platform.files.discover import TextScan, scan_text
from dia_assets.platform.files.encodings import Detection, legacy_encoding
from dia_assets.platform.files.final_record import CutRecord, cut_final_record, without_cut
from dia_assets.platform.files.rewrite import (
    TextStats,
    binary_offset,
    bom_encoding,
    rewrite_records,
    rewrite_text,
    sample_text,
)
from dia_assets.platform.naming import snake_case, unique_names

SAMPLE_BYTES = 1 << 16
MAX_SAMPLE_BYTES = 1 << 26


@dataclass
class Prepared:
    """What DuckDB should read and how, plus what the reader must report."""

    path: Path  # the file DuckDB reads (the original or a rewrite in scratch)
    delimiter: str  # as DuckDB sees it
    dialect: Dialect
    header: headers.HeaderDecision
    raw_names: list[str]
    encoding: str
    text: TextStats
    rewritten: bool = False
    records_written: int | None = None  # records in the rewrite, header included
    declared: DeclaredTable | None = None
    detection: Detection | None = None  # how the legacy encoding of a non-UTF-8 file was chosen
    cut: CutRecord | None = None  # an unterminated last record, left out of `path`


class NotText(ValueError):
    """The file is not delimited text; the message says why."""


def prepare_csv(
    path: Path, scratch: Path, scan: TextScan | None, transcode: Callable[[Path, str], Path],
    origin: Path | None = None,
) -> Prepared:
    """Sniff and, when needed, rewrite `path`. `transcode(path, encoding)` handles BOM files.
    `origin`: the file in the data folder when `path` is its plain copy (a schema file beside
    it may declare it)."""
    with path.open("rb") as fh:
        head = fh.read(SAMPLE_BYTES)
    nul = binary_offset(head)
    if nul is not None:
        raise NotText(f"binary content, not a text CSV (NUL byte at offset {nul}); is this file really a CSV?")
    bom = bom_encoding(path)
    scan = scan or scan_text(path)
    if bom == "utf-8-sig" and not scan.utf8:
        bom = None  # a UTF-8 BOM over lines in another encoding: read line by line, the BOM dropped
    source, encoding = path, "utf-8"
    if bom:
        source, encoding = transcode(path, bom), bom
    per_line = not bom and not scan.utf8
    declared = declared_for(origin or path)
    # only a file that is not UTF-8 pays for detection, on a bounded sample of its lines
    detection = legacy_encoding(path, declared) if per_line else None
    fallback = detection.encoding if detection else "cp1252"
    sample = sample_text(source, per_line, SAMPLE_BYTES, fallback)
    if not sample.strip():
        raise NotText("file holds only blank lines")
    dialect = _declared_dialect(sample, declared) or sniff(sample, tsv=path.suffix.lower() == ".tsv")
    size = SAMPLE_BYTES
    while len(dialect.records) < 2 and size < MAX_SAMPLE_BYTES and source.stat().st_size > size:
        size *= 16  # huge fields: sample until two whole records are seen
        sample = sample_text(source, per_line, size, fallback)
        dialect = _declared_dialect(sample, declared) or sniff(sample, tsv=path.suffix.lower() == ".tsv")
    decision, raw_names = _names(dialect, declared)
    text = TextStats(fallback=fallback)
    stem = f"{path.stem}.{zlib.crc32(str(path).encode()):08x}"
    cut = cut_final_record(source, dialect.terminator, fallback, dialect.delimiter, dialect.fields, origin=path)
    if cut is not None:  # the readers read the file without its cut record
        source = without_cut(source, cut, scratch / f"{stem}.whole{path.suffix}")
    prepared = Prepared(
        path=source, delimiter=dialect.delimiter, dialect=dialect, header=decision,
        raw_names=raw_names, encoding=encoding, text=text, declared=declared, detection=detection, cut=cut,
    )
    has_nul = scan.nul
    if bom:  # NUL markers are judged on the transcoded text
        with source.open("rb") as fh:
            has_nul = b"\x00" in fh.read(SAMPLE_BYTES)
    # An unquoted file with NUL bytes is a bulk-copy export (bcp never quotes): its lone NUL
    # fields are empty strings. In a quoted CSV a NUL is data, read as it is.
    if not dialect.standard or (has_nul and not dialect.quoted):
        target = scratch / f"{stem}.records.csv"
        prepared.records_written = rewrite_records(source, target, dialect, per_line, text)
        prepared.path, prepared.delimiter, prepared.rewritten = target, ",", True
    elif per_line:
        newline = b"\r" if dialect.terminator == "\r" else b"\n"
        prepared.path = rewrite_text(source, scratch / f"{stem}.utf8.csv", text, newline)
        prepared.rewritten = True
    if per_line:
        prepared.encoding = text.encoding() if text.fallback_lines or text.utf8_lines else "utf-8"
    return prepared


def _declared_dialect(sample: str, declared: DeclaredTable | None) -> Dialect | None:
    """The schema file's terminators, when it gives one and the sample splits evenly with them."""
    if declared is None or not (declared.field_terminator or declared.record_terminator):
        return None
    newline = newline_of(sample)
    term = declared.record_terminator or newline
    if term.endswith("\n") and not term.endswith("\r\n") and newline == "\r\n":
        term = term[:-1] + "\r\n"
    delim = declared.field_terminator or ","
    quoted = term in ("\n", "\r\n", "\r") and len(delim) == 1 and '"' in sample
    dialect = measure(sample, delim, term, quoted)
    return dialect if dialect.fields > 1 and dialect.consistency >= 0.9 and not dialect.stray else None


def _names(dialect: Dialect, declared: DeclaredTable | None) -> tuple[headers.HeaderDecision, list[str]]:
    """Header decision and raw column labels; a schema file's column list names headerless files."""
    records = dialect.records
    first = records[0] if records else []
    width = max(len(first), dialect.fields)
    columns = declared_columns(declared, dialect.fields)
    if declared and columns:
        names = [c.name for c in columns]
        source = f"column names from {declared.schema_file}"
        if [snake_case(v) for v in first] == [snake_case(n) for n in names]:
            return headers.HeaderDecision(True, True, f"first row repeats the {source}"), names
        if declared.header:  # a declared header-skip is checked: a first line that is data is data
            decision = _decide(records, width)
            if not decision.header and decision.certain:
                return headers.HeaderDecision(False, True, f"{decision.reason}; {source}",
                                              overruled=f"{declared.schema_file} declares a header line "
                                              f"to skip, but the first line is data ({decision.reason})"), names
            # as declared; unsettled unless its values read as labels (they are not the declared names)
            return headers.HeaderDecision(True, decision.header and decision.certain,
                                          f"{source}; header as declared ({decision.reason})"), names
        if declared.header is not None:
            return headers.HeaderDecision(declared.header, True, f"{source}; header as declared"), names
        decision = _decide(records, width)
        return headers.HeaderDecision(decision.header, decision.certain, f"{decision.reason}; {source}"), names
    decision = _decide(records, width) if records else headers.HeaderDecision(True, True, "empty")
    if decision.header:
        return decision, list(first)
    return decision, [f"column_{i + 1}" for i in range(width)]


def _decide(records: list[list[str]], width: int) -> headers.HeaderDecision:
    """Header by types on up to 200 records (fewer for wide files: the work is records x columns)."""
    return headers.decide(records[: max(20, min(200, 20_000 // max(1, width)))])


def declared_columns(declared: DeclaredTable | None, fields: int) -> list[DeclaredColumn]:
    """The schema file's columns as the data file holds them (computed columns are not exported)."""
    if declared is None:
        return []
    stored = [c for c in declared.columns if not c.computed]
    for columns in (declared.columns, stored):
        if columns and len(columns) == fields:
            return columns
    return []


def final_names(raw_names: list[str]) -> tuple[list[str], list[int]]:
    """Column names, with an empty label named `column_N`; the 1-based positions of empty labels."""
    empty = [i + 1 for i, label in enumerate(raw_names) if not label.strip()]
    labels = [label if label.strip() else f"column_{i + 1}" for i, label in enumerate(raw_names)]
    return unique_names(labels), empty
