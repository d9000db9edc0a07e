"""Find the raw files in a data folder and fingerprint them."""

from __future__ import annotations

import codecs
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from dia_assets.platform.files.compressed import READ_INSIDE, compression, data_stem

FORMATS = {
    ".csv": "csv", ".tsv": "csv", ".txt": "csv", ".dat": "csv",
    ".json": "json", ".jsonl": "jsonl", ".ndjson": "jsonl",
    ".xlsx": "excel", ".xlsm": "excel", ".xls": "excel",
    ".parquet": "parquet", ".pq": "parquet",
}
# Documentation that travels with an export is not data.
# A schema file (.sql) is read by `declared.py` as evidence about the data files beside it.
IGNORED_SUFFIXES = {".md", ".rst", ".yaml", ".yml", ".pdf", ".sql"}
SCHEMA_SUFFIX = ".sql"


@dataclass(frozen=True)
class RawFile:
    path: Path
    format: str | None  # None: a format we do not read
    refused: str | None = None  # why the file is not read at all (unsafe or not a regular file)

    @property
    def stem(self) -> str:
        return data_stem(self.path)


def file_format(path: Path) -> str | None:
    """The format a file is read as; a compressed text file (`orders.csv.gz`) as the file inside."""
    if compression(path):
        inner = FORMATS.get(Path(path.stem).suffix.lower())
        return inner if inner in READ_INSIDE else None
    return FORMATS.get(path.suffix.lower())


def discover(data_dir: Path, refused: list[RawFile] | None = None) -> list[RawFile]:
    """Every data file under `data_dir`, sorted, hidden files and docs skipped.

    Only regular files inside the folder are data: a symlink resolving outside it (it could
    expose any file the process can read) and special files (FIFOs, sockets, devices) are
    left out, and appended to `refused` with the reason when the caller asks. A symlink
    that stays inside the folder is read like the file it points to. Schema files (`.sql`)
    are not data, but follow the same rules: one that breaks them is refused here too."""
    if not data_dir.exists():
        raise FileNotFoundError(f"data folder {data_dir} does not exist")
    if not data_dir.is_dir():
        raise NotADirectoryError(f"{data_dir} is not a folder")
    root = data_dir.resolve()
    files = []
    for path in sorted(data_dir.rglob("*")):
        rel = path.relative_to(data_dir)
        if any(part.startswith((".", "~$")) for part in rel.parts) or path.is_dir():
            continue
        suffix = path.suffix.lower()
        if suffix in IGNORED_SUFFIXES and suffix != SCHEMA_SUFFIX:
            continue
        raw = RawFile(path=path, format=file_format(path))
        problem = unsafe_reason(root, path)
        if suffix == SCHEMA_SUFFIX and not problem:
            continue  # a schema file is read by declared.py, under the same rules
        if problem:
            if refused is not None:
                refused.append(RawFile(path=path, format=raw.format, refused=problem))
            continue
        files.append(raw)
    return files


def unsafe_reason(root: Path, path: Path) -> str | None:
    """Why `path` must not be read as data from the folder `root`, or None."""
    if path.is_symlink():
        target = path.resolve()
        if not target.is_relative_to(root.resolve()):
            return f"a symbolic link to {target}, outside the data folder; copy the file in if it belongs here"
    if not path.exists():
        return "a broken symbolic link"
    if not path.is_file():
        return "not a regular file (a pipe, socket or device)"
    return None


@dataclass(frozen=True)
class TextScan:
    """What one read of the whole file tells the readers: whether every byte decodes as
    UTF-8, and whether a NUL byte appears anywhere (a bulk-copy empty-string marker can
    first show up far past any sample)."""

    utf8: bool
    nul: bool


def hash_and_scan(path: Path, chunk: int = 1 << 22) -> tuple[str, TextScan]:
    """sha256 and the text scan, in one read of the file."""
    digest = hashlib.sha256()
    scan = _scan(path, chunk, digest.update)
    return digest.hexdigest(), scan


CLEAN = TextScan(utf8=True, nul=False)


def looks_clean(path: Path, head: int = 1 << 16) -> bool:
    """Whether the head of the file is UTF-8 without NUL bytes: the scan of the whole file
    will most likely say CLEAN, so the reader may start on that guess while it runs."""
    with path.open("rb") as fh:
        block = fh.read(head)
    if b"\x00" in block:
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(block)  # a character cut at the end is fine
    except UnicodeDecodeError:
        return False
    return True


def scan_text(path: Path, chunk: int = 1 << 22) -> TextScan:
    return _scan(path, chunk, lambda _block: None)


def _scan(path: Path, chunk: int, each: Callable[[bytes], None]) -> TextScan:
    decoder = codecs.getincrementaldecoder("utf-8")()
    utf8, nul = True, False
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            each(block)
            nul = nul or b"\x00" in block
            # ASCII with no character left open by the previous block is valid UTF-8 as it
            # is: checked without decoding it into a string (most files are ASCII)
            if utf8 and not (block.isascii() and not decoder.getstate()[0]):
                try:
                    decoder.decode(block)
                except UnicodeDecodeError:
                    utf8 = False
    if utf8:
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            utf8 = False
    return TextScan(utf8=utf8, nul=nul)


def content_hash(path: Path, chunk: int = 1 << 20) -> str:
    """sha256 of the bytes: the data version Dagster shows for a raw file."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()
