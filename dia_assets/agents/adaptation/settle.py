"""Settle time: a file still being written is never read.

A file counts as settled once a tick of the sensor finds the same size and version (a local
file's modification time, an object's ETag: folder_index.Listed) that an earlier tick recorded
at least `settle_s` seconds before. An object store shows an object only once its upload is
complete, but a tool that rewrites a set of objects one after the other is still moving. A writer that is still
appending changes one or the other, so a half-written file waits; a copy that stalls longer
than the settle time is caught later by the last-record check (platform/files/final_record.py).
`settle_s <= 0` reads files at once (no waiting: for tests and for folders filled atomically,
for example by rename).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, model_validator

from dia_assets.agents.adaptation.folder_index import Listed


class Seen(BaseModel):
    """A file's size and version (mtime in ns, or ETag), and when a tick first found them so."""

    size: int
    version: str
    since: float  # wall-clock seconds (time.time()) of the first tick that saw this size and version

    @model_validator(mode="before")
    @classmethod
    def _older(cls, data: Any) -> Any:
        """A cursor of an older DIA recorded `mtime_ns`: the same version, as a number."""
        if isinstance(data, dict) and "mtime_ns" in data and "version" not in data:
            data = {**data, "version": str(data.pop("mtime_ns"))}
        return data


def sightings(listing: Mapping[str, Listed], rels: list[str], now: float, before: dict[str, Seen]) -> dict[str, Seen]:
    """The size and version of each file in `rels` as the tick's listing found it, keeping the
    first sighting from `before` when nothing moved. A file not listed (gone) is left out."""
    out: dict[str, Seen] = {}
    for rel in rels:
        item = listing.get(rel)
        if item is None:
            continue
        old = before.get(rel)
        same = old is not None and old.size == item.size and old.version == item.version
        out[rel] = old if same else Seen(size=item.size, version=item.version, since=now)  # type: ignore[assignment]
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
        # cur None: not in the listing, still moving
        if cur is None or old is None or old != cur or now - cur.since < settle_s:
            out.append(rel)
    return sorted(out)
