"""Streaming rewrites that let DuckDB read what it cannot read as is.

- Text: lines decoded one by one (UTF-8 where they decode, else the file's legacy encoding as
  `encodings.detect` found it, cp1252 unless it found another), written as UTF-8. One bad line
  never decides the encoding of the whole file.
- Records: bulk-copy files (multi-character field terminators, record terminators such as `&|` +
  newline, newlines inside unquoted values, or unquoted fields holding NUL bytes) become an RFC 4180
  CSV, every value quoted so that embedded newlines survive; an empty field stays NULL and a field
  that is exactly NUL is '' (bcp's empty-string marker).

A NUL byte is never dropped: inside a value it is data (DuckDB keeps it), and only a bulk-copy
file's lone NUL field means the empty string.
"""

from __future__ import annotations

import codecs
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dia_assets.platform.files.dialect import Dialect

CHUNK = 1 << 20


@dataclass
class TextStats:
    utf8_lines: int = 0  # lines (or whole chunks) with non-ASCII text that decoded as UTF-8
    fallback_lines: int = 0  # lines that needed the fallback encoding
    first_fallback: list[int] | None = None  # 1-based line numbers, a few
    fallback: str = "cp1252"  # the encoding of lines that are not UTF-8

    @property
    def mixed(self) -> bool:
        return self.utf8_lines > 0 and self.fallback_lines > 0

    def encoding(self) -> str:
        if self.mixed:
            return f"utf-8+{self.fallback}"
        return self.fallback if self.fallback_lines else "utf-8"


def stats_for(encoding: str | None) -> TextStats:
    """The line decoder for a recorded `parse.encoding` (`cp1251`, `utf-8+cp1252`)."""
    fallback = (encoding or "utf-8").removeprefix("utf-8+")
    return TextStats(fallback="cp1252" if fallback == "utf-8" else fallback)


def binary_offset(head: bytes) -> int | None:
    """Offset of the first NUL if the head looks binary: NUL runs, many NULs, or control bytes.

    Isolated NULs between delimiters are empty-string markers of bulk-copy exports, not binary.
    """
    if not head or head.startswith((b"\xff\xfe", b"\xfe\xff")) or utf16_without_bom(head):
        return None
    nul = head.find(b"\x00")
    controls = sum(head.count(bytes([b])) for b in range(1, 32) if b not in (9, 10, 13))
    if b"\x00\x00" in head or head.count(b"\x00") > len(head) * 0.2 or controls > len(head) * 0.05:
        return nul if nul >= 0 else 0
    return None


def bom_encoding(path: Path) -> str | None:
    """The encoding a byte-order mark (or UTF-16's telltale NULs) declares, if any."""
    with path.open("rb") as fh:
        head = fh.read(4096)
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"
    return utf16_without_bom(head)


def utf16_without_bom(head: bytes) -> str | None:
    """`utf-16-le`/`-be` when NULs fill one byte of nearly every pair (as `bcp -w` writes, no BOM)."""
    sample = head[: len(head) // 2 * 2][:4096]
    if len(sample) < 4:
        return None
    odd, even = sample[1::2].count(0), sample[0::2].count(0)
    half = len(sample) // 2
    if odd > half * 0.7 and even < half * 0.05:
        return "utf-16-le"
    if even > half * 0.7 and odd < half * 0.05:
        return "utf-16-be"
    return None


def decode_line(raw: bytes, stats: TextStats, number: int) -> str:
    try:
        text = raw.decode("utf-8")
        if not raw.isascii():
            stats.utf8_lines += 1
        return text
    except UnicodeDecodeError:
        stats.fallback_lines += 1
        if stats.first_fallback is None:
            stats.first_fallback = []
        if len(stats.first_fallback) < 5:
            stats.first_fallback.append(number)
        try:
            return raw.decode(stats.fallback)
        except UnicodeDecodeError:
            # cp1252 leaves five bytes undefined: Latin-1 keeps them, as it always did; in another
            # encoding a broken character is marked, not turned into Latin-1 mojibake
            if stats.fallback == "cp1252":
                return raw.decode("latin-1")
            return raw.decode(stats.fallback, errors="replace")


def decoded_chunks(path: Path, per_line: bool, stats: TextStats, newline: bytes = b"\n") -> Iterator[str]:
    """The file as text, chunk by chunk; line by line decoding when the file is not all UTF-8."""
    with path.open("rb") as fh:
        if not per_line:
            decoder = codecs.getincrementaldecoder("utf-8")("replace")
            while block := fh.read(CHUNK):
                yield decoder.decode(block)
            yield decoder.decode(b"", final=True)
            return
        pending, number = fh.read(len(codecs.BOM_UTF8)).removeprefix(codecs.BOM_UTF8), 1  # a BOM is no text
        while block := fh.read(CHUNK):
            data = pending + block
            cut = data.rfind(newline) + 1
            data, pending = data[:cut], data[cut:]
            try:  # most chunks of a mostly-UTF-8 file decode whole
                text = data.decode("utf-8")
                stats.utf8_lines += 0 if data.isascii() else 1
                number += data.count(newline)
                yield text
                continue
            except UnicodeDecodeError:
                pass
            lines = data.split(newline)[:-1]
            out = []
            for raw in lines:
                out.append(decode_line(raw, stats, number) + newline.decode())
                number += 1
            yield "".join(out)
        if pending:
            yield decode_line(pending, stats, number)


def sample_text(path: Path, per_line: bool, size: int = 1 << 16, fallback: str = "cp1252") -> str:
    """The decoded head of the file, cut at a line end so no character is split."""
    with path.open("rb") as fh:
        head = fh.read(size)
    if len(head) == size:
        cut = max(head.rfind(b"\n"), head.rfind(b"\r"))
        head = head[: cut + 1] if cut > 0 else head
    if not per_line:
        return head.decode("utf-8", errors="replace")
    head = head.removeprefix(codecs.BOM_UTF8)
    stats = TextStats(fallback=fallback)
    return "".join(decode_line(raw, stats, 0) + "\n" for raw in head.split(b"\n"))[:-1]


def rewrite_text(path: Path, target: Path, stats: TextStats, newline: bytes) -> Path:
    """A UTF-8 copy, decoded line by line (NUL bytes kept: they are data)."""
    with target.open("w", encoding="utf-8", newline="") as out:
        for chunk in decoded_chunks(path, True, stats, newline):
            out.write(chunk)
    return target


def _quote(value: str) -> str:
    if value == "":
        return ""  # an empty field is NULL
    if value == "\x00":
        return '""'  # the bulk-copy empty-string marker
    return '"' + value.replace('"', '""') + '"'


def rewrite_records(
    path: Path, target: Path, dialect: Dialect, per_line: bool, stats: TextStats
) -> int:
    """An RFC 4180 copy of a bulk-copy file; returns the number of records written."""
    term, delim = dialect.terminator, dialect.delimiter
    newline = b"\r" if dialect.terminator == "\r" else b"\n"
    records = 0
    with target.open("w", encoding="utf-8", newline="") as out:
        pending = ""
        for chunk in decoded_chunks(path, per_line, stats, newline):
            parts = (pending + chunk).split(term)
            pending = parts.pop()
            for record in parts:
                if record.strip():
                    out.write(",".join(_quote(v) for v in record.split(delim)) + "\n")
                    records += 1
        tail = pending
        for end in (term, term.rstrip("\r\n"), "\r\n", "\n"):
            if end and tail.endswith(end):
                tail = tail[: -len(end)]
                break
        if tail.strip():
            out.write(",".join(_quote(v) for v in tail.split(delim)) + "\n")
            records += 1
    return records
