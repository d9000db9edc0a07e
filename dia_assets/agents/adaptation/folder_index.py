"""What each data file was the last time the sensor looked: size, version, content hash.

A sensor tick over a folder of 100,000 files cannot read every byte every 30 seconds. The tick
lists the folder instead (one stat per file: path, size, modification time, or an object
store's ETag) and hashes only the files whose size or version differ from the index the
previous tick left; every other file keeps the hash recorded then. That is the contract the
issue names (and rsync's quick check, and git's index): a rewrite that keeps both the size
and the modification time to the nanosecond is not seen until either moves.

One guard against a write the clock cannot tell apart (git's "racy clean" problem): a file
whose modification time is within `RACY_NS` of the listing may still be written in the same
clock tick, on a file system with coarse timestamps, without its mtime moving. Its hash is not
trusted for reuse: it is hashed again on every tick until its mtime is older than that.

The index lives in a file of its own under the workspace's state folder, named by the digest
of its content; the sensor's cursor keeps only that digest, so the cursor stays a few hundred
bytes however many files the folder holds, and a tick evaluated again from an older cursor
reads the index that cursor knew (the last `KEEP` index files are kept). A missing or
unreadable index is no error: every file is hashed again, as on a first tick.

The listing goes through one function, a `Lister` (`local_listing` here); an object-storage
lister returns the same `Listed` rows with the ETag as the version, and a hasher that reads
the object: nothing else changes.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from dia_assets.platform.files.discover import discover

RACY_NS = 2_000_000_000  # 2 s: coarser than any file system's mtime granularity but FAT's
KEEP = 8  # index files kept: a tick may be evaluated again from a recent older cursor
FORMAT = 1


class Listed(NamedTuple):
    """One file as listed: where, how big, and a version that moves when its content does."""

    path: str  # relative to the folder, as the sensor's snapshot names it
    size: int
    version: str  # local files: the mtime in nanoseconds; object storage: the ETag
    stable: bool = True  # False: the version may not have moved yet for the latest write (see RACY_NS)


Lister = Callable[[], list[Listed]]
Hasher = Callable[[str], str]  # relative path -> sha256 of the content


def local_listing(data_dir: Path) -> list[Listed]:
    """The data files of a local folder (the same files `discover` finds), with one stat each."""
    now = time.time_ns()
    out = []
    for raw in discover(data_dir):
        try:
            st = os.stat(raw.path)
        except OSError:  # gone since it was found
            continue
        out.append(Listed(str(raw.path.relative_to(data_dir)), st.st_size, str(st.st_mtime_ns),
                          now - st.st_mtime_ns >= RACY_NS))
    return out


class Entry(NamedTuple):
    size: int
    version: str  # "" when hashed while racy: never matches a listing, so hashed again
    hash: str
    reported: bool  # the sensor reported this hash as the file's data version (or saw it reported)


@dataclass
class FolderIndex:
    entries: dict[str, Entry] = field(default_factory=dict)
    digest: str | None = None  # the digest it is stored under, when known

    def hashes(self) -> dict[str, str]:
        """Relative path -> content hash: the snapshot the sensor compares."""
        return {rel: e.hash for rel, e in self.entries.items()}

    def unreported(self) -> dict[str, str]:
        """The files whose current hash was not reported yet (new, changed, or never checked)."""
        return {rel: e.hash for rel, e in self.entries.items() if not e.reported}

    def all_reported(self) -> FolderIndex:
        """This index once every file's current hash was reported (or found reported)."""
        if all(e.reported for e in self.entries.values()):
            return self
        return FolderIndex({rel: e._replace(reported=True) for rel, e in self.entries.items()})

    def serialized(self) -> bytes:
        rows = {rel: [e.size, e.version, e.hash, int(e.reported)] for rel, e in self.entries.items()}
        return json.dumps({"format": FORMAT, "files": rows}, separators=(",", ":")).encode()


def refresh(listing: list[Listed], previous: FolderIndex | None, hash_of: Hasher) -> tuple[FolderIndex, list[str]]:
    """The index of the folder now, and the files that were read to make it: only those whose
    size or version differ from `previous` (all of them without one). A file that vanished
    between the listing and its hashing is left out, as if listed a moment later."""
    before = previous.entries if previous is not None else {}
    entries: dict[str, Entry] = {}
    read: list[str] = []
    for item in listing:
        old = before.get(item.path)
        if old is not None and old.version and old.size == item.size and old.version == item.version:
            entries[item.path] = old
            continue
        try:
            digest = hash_of(item.path)
        except OSError:
            continue
        reported = old is not None and old.reported and old.hash == digest
        entries[item.path] = Entry(item.size, item.version if item.stable else "", digest, reported)
        read.append(item.path)
    index = FolderIndex(entries)
    if previous is not None and previous.digest and entries == before:
        index.digest = previous.digest
    return index, read


class IndexStore:
    """Index files under a folder (the workspace's state/sensor), named by their digest."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, digest: str) -> Path:
        return self.folder / f"index-{digest}.json.gz"

    def load(self, digest: str | None) -> FolderIndex | None:
        """The index stored under `digest`; None when there is none (or it cannot be read)."""
        if not digest:
            return None
        try:
            data = json.loads(gzip.decompress(self._path(digest).read_bytes()))
            if data.get("format") != FORMAT:
                return None
            entries = {rel: Entry(int(s), str(v), str(h), bool(r)) for rel, (s, v, h, r) in data["files"].items()}
        except (OSError, ValueError, TypeError, KeyError, EOFError):
            return None
        return FolderIndex(entries, digest)

    def save(self, index: FolderIndex) -> str:
        """Store `index` (unless stored already) and return its digest; keep the last `KEEP` files."""
        if index.digest and self._path(index.digest).exists():
            return index.digest
        body = index.serialized()
        digest = hashlib.sha256(body).hexdigest()[:32]
        path = self._path(digest)
        if not path.exists():
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(gzip.compress(body, compresslevel=1))
            os.replace(tmp, path)
        else:
            os.utime(path)  # the newest again: not pruned
        self._prune(keep=path)
        index.digest = digest
        return digest

    def _prune(self, keep: Path) -> None:
        files = sorted(self.folder.glob("index-*.json.gz"), key=lambda p: p.stat().st_mtime_ns, reverse=True)
        for old in files[KEEP:]:
            if old != keep:
                old.unlink(missing_ok=True)
