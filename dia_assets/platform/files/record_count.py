"""Count a delimited file's records from its bytes, as DuckDB's CSV reader splits them.

Nothing lost on the way in means: records in the file = rows loaded + lines rejected. The
count must not come from the reader it checks, so this is a pass over the bytes, in blocks,
with DuckDB's rules (measured on DuckDB 2.0.1):

- a record ends at `\\n`, `\\r\\n` or a lone `\\r`, outside quotes;
- a quote opens a quoted field only at the start of a field (`ab"c` is text), `""` inside one
  is a quote, and a quoted field may hold line ends;
- an empty line is no record in a file of several columns, and a record (one empty value) in a
  file of one column; a line of spaces is a record (DuckDB rejects it as short);
- a last record without a line end is a record.

The same pass finds the longest record: DuckDB holds a whole record in its read buffer, so the
buffer is sized from it (`buffer_size`) and a record beyond DIA_CSV_MAX_RECORD is refused by
line instead of failing the read. Blocks without a quoted field that spans a line end (nearly
all) are counted with numpy; only blocks with one go record by record through a regex.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

BLOCK = 8 << 20
QUOTE = b'"'


@dataclass(frozen=True)
class RecordCount:
    """Records of a file (the header line included), its longest record and where it starts."""

    records: int
    longest: int  # bytes, without the line end
    longest_line: int  # 1-based physical line where the longest record starts
    unclosed_quote: bool = False  # the file ends inside a quoted field (counted as one record)


class _Patterns:
    """The regex of a whole record, for one delimiter (the slow path)."""

    def __init__(self, delimiter: bytes) -> None:
        d = re.escape(delimiter)
        if len(delimiter) == 1:
            other, first = rb"[^" + d + rb"\r\n]", rb'[^"' + d + rb"\r\n]"
        else:
            other = rb"(?:(?!" + d + rb")[^\r\n])"
            first = rb"(?:(?!" + d + rb')[^"\r\n])'
        # quoted (nothing between its closing quote and the delimiter), unquoted, or empty
        field = rb'(?:"[^"]*(?:""[^"]*)*"|' + first + other + rb"*|)"
        self.record = re.compile(field + rb"(?:" + d + field + rb")*(\r\n|\r|\n)")


def _terminators(seg: bytes) -> tuple[np.ndarray, np.ndarray]:
    """Start and end offsets of every line end of `seg` (`\\r\\n` is one)."""
    arr = np.frombuffer(seg, dtype=np.uint8)
    nl = np.flatnonzero(arr == 10)
    if b"\r" not in seg:
        return nl, nl + 1
    cr = np.flatnonzero(arr == 13)
    lone = cr[(cr + 1 >= len(arr)) | (arr[np.minimum(cr + 1, len(arr) - 1)] != 10)]
    paired = cr[~np.isin(cr, lone)]
    starts = np.sort(np.concatenate([nl[~np.isin(nl - 1, paired)], paired, lone]))
    ends = starts + 1 + (arr[starts] == 13) * (arr[np.minimum(starts + 1, len(arr) - 1)] == 10)
    return starts, ends


class _Counter:
    def __init__(self, delimiter: str, columns: int) -> None:
        self.p = _Patterns(delimiter.encode("utf-8"))
        self.keep_empty = columns <= 1
        raw = delimiter.encode("utf-8")
        self.after_field = np.frombuffer(raw[-1:] + b"\r\n", dtype=np.uint8)  # bytes before a field's start
        self.before_field = np.frombuffer(raw[:1] + b"\r\n", dtype=np.uint8)  # bytes after a field's end
        self.records = self.longest = self.lines = 0
        self.longest_line = 1

    def _note(self, length: int, line: int) -> None:
        if length > self.longest:
            self.longest, self.longest_line = length, line

    def fast(self, seg: bytes) -> int | None:
        """Count the complete records of `seg` (whole lines) with numpy; return where the first
        incomplete one starts, or None when a quote is not where a well-formed file has one (a
        quote inside an unquoted value): then quote parity is not DuckDB's state and `slow` counts.

        In a file whose quotes open only at a field start, close only before a delimiter or a line
        end, and are doubled inside a quoted field, "inside quotes" is "after an odd number of
        quotes": a line end is a record end when an even number of quotes precede it."""
        arr = np.frombuffer(seg, dtype=np.uint8)
        starts, ends = _terminators(seg)
        if QUOTE in seg:
            qpos = np.flatnonzero(arr == 34)
            if not self._well_placed(arr, qpos):
                return None
            outside = np.searchsorted(qpos, starts) % 2 == 0
            physical = starts
            starts, ends = starts[outside], ends[outside]
        else:
            physical = starts
        if not len(starts):
            return 0
        prev = np.concatenate([[0], ends[:-1]])
        lengths = starts - prev
        self.records += int(len(lengths) if self.keep_empty else np.count_nonzero(lengths))
        top = int(np.argmax(lengths))
        if int(lengths[top]) > self.longest:
            self._note(int(lengths[top]), self.lines + int(np.searchsorted(physical, prev[top])) + 1)
        done = int(ends[-1])
        self.lines += int(np.searchsorted(physical, done))
        return done

    def _well_placed(self, arr: np.ndarray, qpos: np.ndarray) -> bool:
        """Every odd quote opens a field (after a delimiter, a line end or the quote before it) and
        every even one closes it (before a delimiter, a line end or the next quote)."""
        size, n = len(arr), len(qpos)
        opens, closes = qpos[0::2], qpos[1::2]
        before = arr[np.maximum(opens - 1, 0)]
        after = arr[np.minimum(closes + 1, size - 1)]
        adjacent = np.zeros(n, dtype=bool)  # the quote right before this one is a quote too
        adjacent[1:] = np.diff(qpos) == 1
        follows = np.zeros(n, dtype=bool)
        follows[:-1] = adjacent[1:]
        ok_open = (opens == 0) | np.isin(before, self.after_field) | adjacent[0::2]
        ok_close = (closes == size - 1) | np.isin(after, self.before_field) | follows[1::2]
        return bool(ok_open.all() and ok_close.all())

    def slow(self, seg: bytes) -> int:
        """Count the complete records of `seg` one by one; return where the first incomplete one
        starts (len(seg) when all are complete)."""
        pos, size = 0, len(seg)
        match = self.p.record.match
        while pos < size:
            m = match(seg, pos)
            if m is None:
                return pos
            end = m.start(1)
            length = end - pos
            if length or self.keep_empty:
                self.records += 1
            if length > self.longest:
                self._note(length, self.lines + 1)
            inside = seg.count(b"\n", pos, m.end())
            self.lines += inside if b"\r" not in m.group(0) else len(_terminators(m.group(0))[0])
            pos = m.end()
        return pos

    def tail(self, rest: bytes) -> None:
        """The last record, without a line end."""
        if rest:
            self.records += 1
            self._note(len(rest), self.lines + 1)


def count_records(path: Path, delimiter: str, columns: int, max_record: int | None = None,
                  block: int = BLOCK) -> RecordCount:
    """Records of `path` (UTF-8, as DuckDB reads it; the header line counts as one) and its
    longest record. `max_record`: stop early once a record is known to be longer (the count is
    then a lower bound, and the caller refuses the file)."""
    counter = _Counter(delimiter, columns)
    carry = b""
    unclosed = False
    with path.open("rb") as fh:
        while True:
            chunk = fh.read(max(block, len(carry)))  # a long record: read on in growing blocks, never rescan it per block
            data = carry + chunk
            if not chunk:
                break
            cut = data.rfind(b"\n")
            if cut < 0:
                cut = data.rfind(b"\r", 0, len(data) - 1)  # a final \r may be half of \r\n
            if cut < 0:
                carry = data
                if max_record is not None and len(carry) > max_record:
                    counter._note(len(carry), counter.lines + 1)
                    break
                continue
            seg, carry = data[:cut + 1], data[cut + 1:]
            done = counter.fast(seg)
            if done is None:
                done = counter.slow(seg)
            carry = seg[done:] + carry
            if max_record is not None and (counter.longest > max_record or len(carry) > max_record):
                counter._note(len(carry), counter.lines + 1)
                break
    if carry and not (max_record is not None and counter.longest > max_record):
        last = carry + b"\n"  # the last record has no line end: count it as if it had one
        done = counter.fast(last)
        if done is None:
            done = counter.slow(last)
        if last[done:].strip(b"\r\n"):  # the file ends inside a quoted field
            unclosed = True
            counter.tail(last[done:-1])
    return RecordCount(counter.records, counter.longest, counter.longest_line, unclosed)
