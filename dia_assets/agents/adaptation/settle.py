"""Settle time: a file still being written is never read.

A file counts as settled once a tick of the sensor finds the same size and modification time
that an earlier tick recorded at least `settle_s` seconds before. A writer that is still
appending changes one or the other, so a half-written file waits; a copy that stalls longer
than the settle time is caught later by the last-record check (platform/files/final_record.py).
`settle_s <= 0` reads files at once (no waiting: for tests and for folders filled atomically,
for example by rename).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel


class Seen(BaseModel):
    """A file's size and modification time, and when a tick first found them so."""

    size: int
    mtime_ns: int
    since: float  # wall-clock seconds (time.time()) of the first tick that saw this size and mtime


def stat_files(data_dir: Path, rels: list[str], now: float, before: dict[str, Seen]) -> dict[str, Seen]:
    """The size and mtime of each file in `rels` (relative to `data_dir`), keeping the first
    sighting from `before` when nothing moved. A file that vanished meanwhile is left out."""
    out: dict[str, Seen] = {}
    for rel in rels:
        try:
            st = (data_dir / rel).stat()
        except OSError:
            continue
        old = before.get(rel)
        same = old is not None and old.size == st.st_size and old.mtime_ns == st.st_mtime_ns
        out[rel] = old if same else Seen(size=st.st_size, mtime_ns=st.st_mtime_ns, since=now)  # type: ignore[assignment]
    return out


def unsettled(rels: list[str], before: dict[str, Seen], now_seen: dict[str, Seen], now: float,
              settle_s: float) -> list[str]:
    """Which of `rels` are not settled yet: not seen unchanged by an earlier tick, or seen so
    for less than `settle_s` seconds."""
    if settle_s <= 0:
        return []
    out = []
    for rel in rels:
        old, cur = before.get(rel), now_seen.get(rel)
        # cur None: gone between the hash and the stat, still moving
        if cur is None or old is None or old != cur or now - cur.since < settle_s:
            out.append(rel)
    return sorted(out)
