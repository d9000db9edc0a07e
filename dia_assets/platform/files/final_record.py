"""The last record of a delimited file must end as the others do.

A file read while it is being written ends inside a record: `5,2` of `5,2064`, which parses as a
good row. When the file's other records end with a record terminator, the last one does not, and
the file normally ends with one, that record is not data: the reader reads the file without it,
and it goes to the reject table with its text and an error issue that keeps the build from being
accepted while it stands. "Normally" is read off the evidence: the record has fewer fields than
the others, or most other delimited files of the same folder (the same export) end with a line
end. Many tools write a complete file without a final line end; with no such evidence its last
record is data.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import duckdb

from dia_assets.contracts.interpretation import QualityIssue
from dia_assets.platform.files.rewrite import TextStats, decode_line
from dia_assets.platform.naming import quote_ident

BLOCK = 1 << 16
DELIMITED = {".csv", ".tsv", ".txt", ".dat", ".tbl"}
REASON = "truncated record: the file ends inside it, without a line end (still being written?)"


@dataclass(frozen=True)
class CutRecord:
    """The unterminated last record: where it starts and what the file holds of it."""

    offset: int  # byte offset of its first byte
    line: int  # its 1-based physical line number
    text: str


def cut_final_record(path: Path, terminator: str, fallback: str = "cp1252", delimiter: str = ",",
                     fields: int = 0, origin: Path | None = None) -> CutRecord | None:
    """The last record when the file does not end with `terminator` (a newline, or a bulk-copy
    terminator such as `&|` + newline) although an earlier record does, and the evidence says
    the file normally ends with one (module docstring); None otherwise. Its text is decoded as the
    reader decodes lines (UTF-8, else the file's `fallback` encoding). `fields`: how many fields
    the file's records have; `origin`: the file in the data folder when `path` is a decoded or
    decompressed copy of it."""
    cut = _unterminated(path, terminator, fallback)
    if cut is None:
        return None
    if len(delimiter) == 1:
        found = len(next(csv.reader([cut.text], delimiter=delimiter), []))
    else:
        found = len(cut.text.split(delimiter))
    return cut if (fields > 1 and found < fields) or _siblings_terminated(origin or path) else None


SIBLING_SHARE = 2 / 3  # of the other delimited files that end with a line end: "the export normally does"


def _siblings_terminated(path: Path) -> bool:
    """Most of the other delimited files beside `path` (at least one) end with a line end."""
    ends = []
    for other in path.parent.iterdir():
        if other == path or not other.is_file() or other.suffix.lower() not in DELIMITED or other.stat().st_size == 0:
            continue
        with other.open("rb") as fh:
            fh.seek(-min(4, other.stat().st_size), 2)
            ends.append(fh.read().rstrip(b"\x00").endswith((b"\n", b"\r")))  # UTF-16 too
    return bool(ends) and sum(ends) >= SIBLING_SHARE * len(ends)


def _unterminated(path: Path, terminator: str, fallback: str) -> CutRecord | None:
    """The last record when the file does not end with `terminator` though an earlier record does."""
    core = terminator.rstrip("\r\n").encode()  # `&|` of `&|\n`; empty for a plain newline
    size = path.stat().st_size
    tail = _tail(path, size, core)
    if core:
        body = tail.rstrip(b" \t\r\n")
        if not body or body.endswith(core):
            return None
        start = body.rfind(core) + len(core) if core in body else 0
        rest = terminator[len(core):].encode()  # the newline that ends the terminator
        if start and tail.startswith(rest, start):
            start += len(rest)
    else:
        start = max(tail.rfind(b"\n"), tail.rfind(b"\r")) + 1
        if not tail[start:].strip():
            return None
    if start == 0 and len(tail) == size:  # no terminator anywhere: a file of one record
        return None
    offset = size - len(tail) + start
    text = decode_line(tail[start:], TextStats(fallback=fallback), 0).strip("\r\n")
    return CutRecord(offset=offset, line=_lines_before(path, offset, terminator) + 1, text=text)


def _tail(path: Path, size: int, core: bytes) -> bytes:
    """The end of the file, from far enough back to hold a terminator before its last record
    (`core`: a bulk-copy terminator without its newline; empty for a newline)."""
    read = min(size, BLOCK)
    with path.open("rb") as fh:
        while True:
            fh.seek(size - read)
            data = fh.read(read)
            found = core in data.rstrip(b" \t\r\n") if core else b"\n" in data or b"\r" in data
            if read == size or found:
                return data
            read = min(size, read * 4)


def _lines_before(path: Path, offset: int, terminator: str) -> int:
    """Physical lines before `offset` (a pass over the file, made only for a cut file)."""
    newline = b"\r" if terminator == "\r" else b"\n"
    count, left = 0, offset
    with path.open("rb") as fh:
        while left > 0 and (block := fh.read(min(left, 1 << 22))):
            count += block.count(newline)
            left -= len(block)
    return count


def without_cut(path: Path, cut: CutRecord, target: Path) -> Path:
    """A copy of the file up to the cut record, for the readers (the raw file is never changed)."""
    with path.open("rb") as src, target.open("wb") as out:
        left = cut.offset
        while left > 0 and (block := src.read(min(left, 1 << 22))):
            out.write(block)
            left -= len(block)
    return target


def set_aside(con: duckdb.DuckDBPyConnection, rejects: str, cut: CutRecord) -> None:
    """The cut record joins the reader's rejected lines (the loader puts them in the reject table)."""
    con.execute(f"INSERT INTO {quote_ident(rejects)} (line, csv_line, error_message) VALUES (?, ?, ?)",
                [cut.line, cut.text, REASON]).fetchall()


def cut_issue(source: str, file: str, line: int, text: str) -> QualityIssue:
    """The error that names a record cut short (`line`: its line number, `text`: what is left of it)."""
    shown = text if len(text) <= 80 else text[:77] + "..."
    return QualityIssue(
        source=source, kind="truncated_record", severity="error", blocking=True, count=1,
        examples=[f"line {line}: {shown}"],
        message=f"{file}: the file ends inside line {line} ({shown!r}): every other record ends with a "
        "line end and this one does not, so it is a record cut short (the file may still be being "
        "written); it is in the reject table, not in the data, and the build is not accepted while it stands",
        suggested_action="Wait until the export has finished, or export the file again; if the file is "
        "complete, end its last line with a line break.",
    )
