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

The listing goes through one function, a `Lister` chosen by `folder_source`: `local_listing`
for a folder, `object_listing` for an `s3://bucket/prefix` URL (one LIST request per 1,000
objects, the ETag as the version: it moves when the content does, so the racy-clean guard does
not apply), with a hasher that streams the object (sha256 of the bytes, the same digest the
interpreter records for its mirrored copy). The settle check and the events' metadata read the
same `Listed` rows, so they need no second look at either kind of folder.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import NamedTuple

from dia_assets.platform.files import object_store
from dia_assets.platform.files.discover import IGNORED_SUFFIXES, content_hash, unsafe_reason

SKIPPED = tuple(IGNORED_SUFFIXES)  # str.endswith: as Path.suffix here (hidden names are skipped first)
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
    """The data files of a local folder, with one stat each: the same files `discover` finds
    (hidden files and folders, documentation and schema files skipped; a symbolic link only
    when it resolves to a regular file inside the folder), walked with `os.scandir` so a
    regular file costs one stat and no `Path` (discover's rglob, sort and checks cost about
    30 µs a file: 3 s a tick at 100,000 files). tests/test_sensor_index.py holds the two equal."""
    root = data_dir.resolve()
    now = time.time_ns()
    out: list[Listed] = []

    def walk(folder: str, prefix: str) -> None:
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except PermissionError:  # as rglob: an unreadable folder holds nothing we can read
            return
        for entry in entries:
            name = entry.name
            if name.startswith((".", "~$")):
                continue
            rel = prefix + name
            if entry.is_dir(follow_symlinks=False):
                walk(entry.path, rel + os.sep)
                continue
            if name.lower().endswith(SKIPPED):
                continue
            if entry.is_symlink():
                path = Path(entry.path)
                if path.is_dir() or unsafe_reason(root, path):
                    continue
            elif not entry.is_file(follow_symlinks=False):
                continue  # a pipe, socket or device
            try:
                st = entry.stat()
            except OSError:  # gone since it was listed
                continue
            out.append(_listed((rel, st.st_size, str(st.st_mtime_ns), now - st.st_mtime_ns >= RACY_NS)))

    walk(str(data_dir), "")
    out.sort()
    return out


def object_listing(url: str) -> list[Listed]:
    """The data files under an object-store prefix, as `local_listing` names them: hidden
    names (at any depth), documentation and schema files skipped; the ETag is the version.
    An unreachable store raises object_store.ObjectStoreError naming the URL."""
    out = []
    for obj in object_store.listing(url):
        parts = obj.rel.split("/")
        if any(part.startswith((".", "~$")) for part in parts) or obj.rel.lower().endswith(SKIPPED):
            continue
        out.append(_listed((obj.rel.replace("/", os.sep), obj.size, obj.etag, True)))
    out.sort()
    return out


def folder_source(data_dir: str | Path) -> tuple[Lister, Hasher]:
    """How the sensor lists the data folder and reads a file's hash: the one place an
    object-store folder (listing by ETag, hashing by a read of the object) is told apart."""
    if object_store.is_url(data_dir):
        url = str(data_dir).rstrip("/")
        fs = object_store.filesystem()
        sizes: dict[str, int] = {}

        def listed() -> list[Listed]:
            out = object_listing(url)
            sizes.clear()
            sizes.update((item.path, item.size) for item in out)
            return out

        def hashed(rel: str) -> str:
            return object_store.object_hash(f"{url}/{rel.replace(os.sep, '/')}", fs, sizes.get(rel))

        return listed, hashed
    folder = Path(data_dir)
    return (lambda: local_listing(folder)), (lambda rel: content_hash(folder / rel))


class Entry(NamedTuple):
    size: int
    version: str  # "" when hashed while racy: never matches a listing, so hashed again
    hash: str
    reported: bool  # the sensor reported this hash as the file's data version (or saw it reported)


# a NamedTuple's own __new__ is Python code: at 100,000 rows a tick, the tuple constructor is
# a third of the listing's cost
_listed: Callable[[tuple], Listed] = partial(tuple.__new__, Listed)
_entry: Callable[[tuple], Entry] = partial(tuple.__new__, Entry)


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
        entries[item.path] = _entry((item.size, item.version if item.stable else "", digest, reported))
        read.append(item.path)
    index = FolderIndex(entries)
    if previous is not None and previous.digest and entries == before:
        index.digest = previous.digest
    return index, read


class StateFiles:
    """Files named by the digest of their content under one folder (the workspace's
    state/sensor): the stat index, and the snapshots a large cursor refers to. Each kind keeps
    its `KEEP` most recently stored or reused files; the current cursor's are always among them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, kind: str, digest: str) -> Path:
        return self.folder / f"{kind}-{digest}.json.gz"

    def get(self, kind: str, digest: str) -> bytes | None:
        """The content stored under `digest`; None when there is none (or it cannot be read)."""
        try:
            return gzip.decompress(self._path(kind, digest).read_bytes())
        except (OSError, EOFError, gzip.BadGzipFile):
            return None

    def put(self, kind: str, body: bytes, digest: str | None = None) -> str:
        """Store `body` (unless stored already: `digest` when known) and return its digest."""
        if digest is None:
            digest = hashlib.sha256(body).hexdigest()[:32]
        path = self._path(kind, digest)
        if path.exists():
            os.utime(path)  # the newest again: not pruned
        else:
            self.folder.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(gzip.compress(body, compresslevel=1))
            os.replace(tmp, path)
            self._prune(kind, keep=path)
        return digest

    def _prune(self, kind: str, keep: Path) -> None:
        def age(p: Path) -> int:
            try:
                return p.stat().st_mtime_ns
            except OSError:
                return 0
        files = sorted(self.folder.glob(f"{kind}-*.json.gz"), key=age, reverse=True)
        for old in files[KEEP:]:
            if old != keep:
                old.unlink(missing_ok=True)

    # the stat index
    def load_index(self, digest: str | None) -> FolderIndex | None:
        """The index stored under `digest`; None when there is none (or it cannot be read)."""
        body = self.get("index", digest) if digest else None
        if body is None:
            return None
        try:
            data = json.loads(body)
            if data.get("format") != FORMAT:
                return None
            entries = {rel: _entry(row) for rel, row in data["files"].items()}  # 100,000 rows: no conversions
        except (ValueError, TypeError, KeyError, AttributeError):
            return None
        return FolderIndex(entries, digest)

    def save_index(self, index: FolderIndex) -> str:
        """Store `index` (unless stored already) and return its digest."""
        if index.digest and self._path("index", index.digest).exists():
            return self.put("index", b"", index.digest)
        index.digest = self.put("index", index.serialized())
        return index.digest

    # the large parts of a cursor (JSON objects: relative path -> content hash, or -> stat)
    def save_snapshot(self, value: dict) -> str:
        return self.put("snapshot", json.dumps(value, sort_keys=True, separators=(",", ":")).encode())

    def load_snapshot(self, digest: str) -> dict | None:
        body = self.get("snapshot", digest)
        try:
            value = json.loads(body) if body is not None else None
        except ValueError:
            return None
        return value if isinstance(value, dict) else None
