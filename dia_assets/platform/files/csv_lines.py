"""A CSV reader of last resort, for files DuckDB cannot split: an unclosed quote.

DuckDB's reader either fails to sniff such a file or swallows everything after the
stray quote into one rejected "line", so thousands of records vanish into one reject.
Here records are split in Python, quote-aware, and a record that cannot be closed (or
that parses to the wrong number of fields) costs only its first physical line: that
line goes to the reject table with its raw text and reading resumes on the next line.
Every physical line ends in exactly one place: a row, a reject, or a skipped blank line.
"""

from __future__ import annotations

import csv
import io
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from dia_assets.platform.naming import quote_ident

# A quoted field may hold newlines; one still open after this many lines is taken as unclosed.
MAX_RECORD_LINES = 1_000
UNCLOSED = "unclosed quote: the quote opened on this line is never closed"


@dataclass
class BadLine:
    line: int
    text: str
    reason: str


def split_records(
    path: Path, delimiter: str, width: int, quote: str = '"'
) -> Iterator[tuple[int, list[str]] | BadLine]:
    """(first line number, fields) per record, or a BadLine; lines are 1-based and physical."""
    source = _physical_lines(path)
    pending: deque[tuple[int, str]] = deque()

    def next_line() -> tuple[int, str] | None:
        return pending.popleft() if pending else next(source, None)

    while (first := next_line()) is not None:
        number, text = first
        if not text.strip():
            continue
        taken = [first]
        while text.count(quote) % 2 and len(taken) < MAX_RECORD_LINES:
            more = next_line()
            if more is None:
                break
            taken.append(more)
            text += more[1]
        fields, reason = _parse(text, delimiter, quote, width)
        if reason is None:
            yield number, fields
            continue
        # Only the first line is lost; the lines it tried to swallow are read again.
        pending.extendleft(reversed(taken[1:]))
        yield BadLine(number, first[1].rstrip("\r\n"), reason)


def _parse(text: str, delimiter: str, quote: str, width: int) -> tuple[list[str], str | None]:
    if text.count(quote) % 2:
        return [], UNCLOSED
    try:
        rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quotechar=quote,
                               doublequote=True, strict=True))
    except csv.Error as exc:
        return [], f"malformed quoting: {exc}"
    if len(rows) != 1:
        return [], "malformed quoting: a quote splits this line in an unexpected place"
    if len(rows[0]) != width:
        return [], f"expected {width} fields, found {len(rows[0])}"
    return rows[0], None


def _physical_lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open("r", encoding="utf-8", newline="") as fh:
        yield from enumerate(fh, start=1)


def load_by_lines(
    con: duckdb.DuckDBPyConnection, path: Path, table: str, rejects: str, names: list[str],
    delimiter: str, header: bool,
) -> tuple[int, list[BadLine]]:
    """Create `table` (all VARCHAR, empty fields NULL) and the temp table `rejects`
    (line, csv_line, error_type, error_message, as DuckDB's store_rejects makes it).
    Returns the number of rows loaded and the bad lines."""
    columns: list[list[str | None]] = [[] for _ in names]
    bad: list[BadLine] = []
    skip_header = header
    for record in split_records(path, delimiter, len(names)):
        if isinstance(record, BadLine):
            bad.append(record)
            continue
        if skip_header:
            skip_header = False
            continue
        for values, value in zip(columns, record[1], strict=True):
            values.append(value if value != "" else None)
    arrow = pa.table({n: pa.array(v, type=pa.string()) for n, v in zip(names, columns, strict=True)})
    con.register("__by_lines", arrow)
    try:
        con.execute(f"CREATE OR REPLACE TABLE {quote_ident(table)} AS SELECT * FROM __by_lines")
    finally:
        con.unregister("__by_lines")
    con.execute(
        f"CREATE OR REPLACE TEMP TABLE {quote_ident(rejects)} "
        "(line BIGINT, csv_line VARCHAR, error_type VARCHAR, error_message VARCHAR)"
    )
    if bad:
        con.register("__bad_lines", pa.table({
            "line": pa.array([b.line for b in bad], type=pa.int64()),
            "csv_line": pa.array([b.text for b in bad], type=pa.string()),
            "error_type": pa.array(["UNCLOSED QUOTE" if b.reason == UNCLOSED else "MALFORMED" for b in bad]),
            "error_message": pa.array([b.reason for b in bad], type=pa.string()),
        }))
        try:
            con.execute(f"INSERT INTO {quote_ident(rejects)} SELECT * FROM __bad_lines")
        finally:
            con.unregister("__bad_lines")
    return arrow.num_rows, bad


def needs_line_reader(con: duckdb.DuckDBPyConnection, rejects: str) -> bool:
    """Whether DuckDB's own read hit an unterminated quote (and so swallowed lines)."""
    try:
        return bool(con.execute(
            f"SELECT count(*) FROM {quote_ident(rejects)} WHERE error_type = 'UNQUOTED VALUE'"
        ).fetchall()[0][0])
    except duckdb.CatalogException:
        return False


def sniff_failed(exc: Exception) -> bool:
    return "error when sniffing file" in str(exc).lower()
