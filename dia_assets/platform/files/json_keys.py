"""JSON objects that give one key twice (`{"id": 1, "a": "x", "a": "y"}`).

DuckDB's reader keeps the first value and Python's `json` the last, both silently: the other
value is lost. Every record is parsed once more with an `object_pairs_hook` that sees the key
list as written: a JSON document streamed value by value (memory bounded by its largest record),
JSON Lines in the pass that finds their bad lines. About the cost of DuckDB's own read again.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from dia_assets.contracts.interpretation import QualityIssue

CHUNK = 1 << 20
MAX_RECORD = 1 << 28  # characters: a record beyond this is not checked (DuckDB allows 512 MB)
EXAMPLES = 5
SEPARATORS = " \t\r\n,\ufeff"


@dataclass
class DuplicateKeys:
    """Records with a key given twice: how many, and the first few (where, which keys)."""

    records: int = 0
    examples: list[str] = field(default_factory=list)

    def add(self, where: str, keys: list[str]) -> None:
        self.records += 1
        if len(self.examples) < EXAMPLES:
            self.examples.append(f"{where}: key {', '.join(map(repr, keys))} given twice")


def loads_noting_repeats(text: str) -> tuple[object, list[str]]:
    """`json.loads(text)` and the keys some object in it gives twice; raises ValueError as it does."""
    found: list[str] = []
    return json.loads(text, object_pairs_hook=_hook(found)), found


def _hook(found: list[str]) -> Callable[[list[tuple[str, object]]], dict[str, object]]:
    """An `object_pairs_hook` that notes into `found` the keys an object repeats."""

    def hook(pairs: list[tuple[str, object]]) -> dict[str, object]:
        built = dict(pairs)
        if len(built) != len(pairs):
            found.extend(k for k, n in Counter(k for k, _ in pairs).items() if n > 1 and k not in found)
        return built

    return hook


def document_duplicates(path: Path) -> DuplicateKeys:
    """Duplicate keys in a JSON document (an array of records, or records one after another)."""
    out = DuplicateKeys()
    for number, keys in _document_values(path):
        if keys:
            out.add(f"record {number}", keys)
    return out


def _document_values(path: Path) -> Iterator[tuple[int, list[str]]]:
    """(1-based record number, repeated keys) per element of a top-level array, or per top-level
    value. Stops quietly where the text is not JSON (the reader reports that) and on a record over
    MAX_RECORD characters."""
    found: list[str] = []
    decoder = json.JSONDecoder(object_pairs_hook=_hook(found))
    with path.open("r", encoding="utf-8", errors="replace") as fh:
        buf, pos, eof, want = "", 0, False, CHUNK
        started, in_array, number = False, False, 0
        while True:
            while True:  # past the separators, reading on when the buffer runs out
                while pos < len(buf) and buf[pos] in SEPARATORS:
                    pos += 1
                if pos < len(buf) or eof:
                    break
                buf, pos = fh.read(CHUNK), 0
                eof = not buf
            if pos >= len(buf) or (in_array and buf[pos] == "]"):
                return
            if not started:
                started, in_array = True, buf[pos] == "["
                pos += in_array
                continue
            found.clear()
            try:
                _value, end = decoder.raw_decode(buf, pos)
                whole = end < len(buf) or eof  # a number may go on in the next chunk
            except json.JSONDecodeError:
                if eof or len(buf) - pos > MAX_RECORD:
                    return
                whole = False
            if not whole:
                more = fh.read(want)
                eof, want = not more, want * 2  # a record larger than the buffer: read on
                buf, pos = buf[pos:] + more, 0
                continue
            number += 1
            yield number, list(found)
            pos, want = end, CHUNK


def duplicate_issue(source: str, file: str, found: DuplicateKeys) -> QualityIssue:
    return QualityIssue(
        source=source, kind="duplicate_json_keys", severity="error", blocking=True, count=found.records,
        examples=found.examples,
        message=f"{file}: {found.records} record(s) give a key twice ({found.examples[0]}"
        f"{', ...' if found.records > 1 else ''}); the reader keeps the first value and the other is lost, "
        "so the build is not accepted while it stands",
        suggested_action="Fix the export so that each key appears once per object (or rename one of the two), "
        "then build again.",
    )
