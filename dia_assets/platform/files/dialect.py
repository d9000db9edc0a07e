"""Sniff a delimited file's dialect from a sample: field and record terminators, and how sure we are.

Bulk-copy exports (bcp, LOAD DATA) use terminators such as `+|` between fields and `&|` + newline
between records, and do not quote. The dialect that wins gives a constant field count and leaves no
systematic stray characters at the ends of values (`+|` read as `|` leaves a `+` on every value).
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from dataclasses import dataclass, field

BASE_DELIMITERS = [",", ";", "\t", "|"]
# Characters that extend a delimiter or a record terminator (`+|`, `~|`, `&|`).
PUNCT = set("!#$&*+<=>?@^`|~")
# Characters a misread terminator leaves at the ends of values (`>` and `!` end ordinary text).
STRAY = set("#$&*+@^`|~")
MAX_TERMINATOR = 4
SAMPLE_RECORDS = 400


@dataclass
class Dialect:
    delimiter: str
    terminator: str  # "\n", "\r\n", "\r" or a custom one such as "&|\n"
    quoted: bool  # fields may be enclosed in double quotes
    fields: int = 0
    consistency: float = 0.0  # share of sample records with the modal field count
    stray: list[int] = field(default_factory=list)  # 1-based columns ending in a stray character
    records: list[list[str]] = field(default_factory=list)  # the sample, split

    lone_newlines: bool = False  # `\n` inside unquoted values of `\r\n` records

    @property
    def standard(self) -> bool:
        """DuckDB reads it as is: a one-character delimiter and a newline record terminator."""
        return len(self.delimiter) == 1 and self.terminator in ("\n", "\r\n", "\r") and not self.lone_newlines

    @property
    def score(self) -> float:
        if self.fields < 2:
            return 0.0
        return self.consistency * min(self.fields, 50) * (0.4 if self.stray else 1.0)


def newline_of(sample: str) -> str:
    """The line break the sample uses most."""
    lf, crlf, cr = sample.count("\n"), sample.count("\r\n"), sample.count("\r")
    if lf == 0:
        return "\r" if cr else "\n"
    return "\r\n" if crlf >= lf / 2 else "\n"


def record_terminators(sample: str, newline: str) -> list[str]:
    """Candidate record terminators: punctuation runs that end many lines (`&|`), then the newline.

    The most common ending of each length competes; the split decides (a record whose last value
    is empty ends in `+|&|`, which must not make `|&|` the terminator)."""
    lines = [line for line in sample.split(newline)[:-1] if line]
    out = []
    for size in range(2, MAX_TERMINATOR):
        ends = Counter(line[-size:] for line in lines if len(line) >= size and set(line[-size:]) <= PUNCT)
        if ends:
            tail, count = ends.most_common(1)[0]
            if count >= max(1 if len(lines) == 1 else 2, 0.3 * len(lines)):
                out.append(tail + newline)
    if newline == "\n" and sample.count("\r\n") >= 2:  # `\r\n` records, `\n` inside values
        out.append("\r\n")
    return [*out, newline]


def extend_delimiter(body: str, base: str, share: float = 0.95) -> str:
    """`|` becomes `+|` (or `~|`, `||`) when nearly every `|` is preceded by that character."""
    total = body.count(base)
    current = base
    while total and len(current) < MAX_TERMINATOR:
        before = Counter(
            body[m.start() - 1] for m in re.finditer(re.escape(current), body)
            if m.start() and body[m.start() - 1] in PUNCT
        )
        if not before:
            break
        char, _ = before.most_common(1)[0]
        if char == base and base != "|":
            break
        candidate = char + current
        if body.count(candidate) * candidate.count(base) < share * total:
            break
        current = candidate
    return current


def split_records(sample: str, delimiter: str, terminator: str, quoted: bool) -> list[list[str]]:
    """Complete records of the sample (the last, possibly cut, one is dropped)."""
    if quoted and len(delimiter) == 1 and terminator in ("\n", "\r\n", "\r"):
        cut = sample.rfind(terminator[-1])
        try:
            text = sample[: cut + 1] if cut >= 0 else sample
            rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
        except csv.Error:
            rows = []
        return [r for r in rows if any(c.strip() for c in r)][:SAMPLE_RECORDS]
    parts = sample.split(terminator)
    if len(parts) > 1:
        parts = parts[:-1]
    return [p.split(delimiter) for p in parts if p.strip()][:SAMPLE_RECORDS]


def stray_columns(records: list[list[str]], fields: int) -> list[int]:
    """Columns whose every value ends with the same stray character: a misread terminator leaves
    it on most columns (field terminator) or on the last one (record terminator)."""
    found: dict[int, tuple[str, int]] = {}
    for index in range(fields):
        ends = [r[index][-1] for r in records if len(r) == fields and r[index]]
        if ends and ends.count(ends[0]) == len(ends) and ends[0] in STRAY:
            found[index + 1] = (ends[0], len(ends))
    shared = Counter(char for char, _ in found.values())
    out = []
    for col, (char, seen) in found.items():
        most = shared[char] >= 2 and shared[char] * 2 >= fields - 1  # one record is enough
        if most or (seen >= 2 and (shared[char] >= 2 or col == fields or len(found) * 2 >= fields - 1)):
            out.append(col)
    return out


def measure(sample: str, delimiter: str, terminator: str, quoted: bool) -> Dialect:
    records = split_records(sample, delimiter, terminator, quoted)
    dialect = Dialect(delimiter=delimiter, terminator=terminator, quoted=quoted, records=records)
    if records:
        mode, freq = Counter(len(r) for r in records).most_common(1)[0]
        dialect.fields, dialect.consistency = mode, freq / len(records)
        dialect.stray = stray_columns(records, mode)
    return dialect


def _better(new: Dialect, old: Dialect) -> bool:
    """Higher score; on a tie the longer delimiter (a `~|` in every record is no accident)."""
    if abs(new.score - old.score) > 1e-9:
        return new.score > old.score
    return new.score > 0 and len(new.delimiter) > len(old.delimiter)


def sniff(sample: str, tsv: bool = False) -> Dialect:
    """The best dialect for a decoded sample."""
    newline = newline_of(sample)
    best: Dialect | None = None
    for terminator in record_terminators(sample, newline):
        body = sample.replace(terminator, "\n") if terminator != newline else sample
        custom = terminator not in ("\n", "\r\n", "\r")
        quoted = not custom and '"' in sample
        for base in ["\t"] if tsv else BASE_DELIMITERS:
            # A strict extension replaces the base; a loose one (a lone `|` in some values) competes.
            strict = extend_delimiter(body, base)
            for delimiter in dict.fromkeys([strict, extend_delimiter(body, base, 0.5)]):
                unquoted = quoted and len(delimiter) > 1  # bulk-copy exports do not quote
                dialect = measure(sample, delimiter, terminator, quoted and not unquoted)
                dialect.lone_newlines = terminator == "\r\n" != newline and not dialect.quoted
                if best is None or _better(dialect, best):
                    best = dialect
    assert best is not None
    if best.fields < 2:  # one column: read line by line
        best = measure(sample, "\t" if tsv else ",", newline, '"' in sample)
    return best
