"""Compressed data files (`orders.csv.gz`, `events.jsonl.zst`): read as the file they hold.

The readers sniff, sample and rewrite bytes, so a compressed file is streamed into scratch
first under its inner name (`orders.csv`) and read from there; the source is named by the
stem without both extensions (`orders`). gzip comes with Python; zstd with `zstandard`.
"""

from __future__ import annotations

import gzip
import shutil
import zlib
from pathlib import Path
from typing import BinaryIO

COMPRESSIONS = {".gz": "gzip", ".gzip": "gzip", ".zst": "zstd", ".zstd": "zstd"}
# Workbooks and Parquet compress themselves; a compressed copy of one is not read.
READ_INSIDE = {"csv", "json", "jsonl"}
CHUNK = 1 << 20


class DecompressError(ValueError):
    """The file does not decompress (corrupt, or cut short while it was being written)."""


def compression(path: Path) -> str | None:
    """`gzip` or `zstd` when the file's last extension names one."""
    return COMPRESSIONS.get(path.suffix.lower())


def inner_name(path: Path) -> str:
    """The name of the file inside: `orders.csv.gz` -> `orders.csv`; other names unchanged."""
    return path.stem if compression(path) else path.name


def data_stem(path: Path) -> str:
    """The stem a source is named by: `orders.csv.gz` -> `orders`, `orders.csv` -> `orders`."""
    return Path(inner_name(path)).stem


def _open(path: Path) -> BinaryIO:
    kind = compression(path)
    if kind == "gzip":
        return gzip.open(path, "rb")
    import zstandard  # only a .zst file needs it

    return zstandard.ZstdDecompressor().stream_reader(path.open("rb"), closefd=True)


def decompress(path: Path, scratch: Path) -> Path:
    """The plain copy of a compressed file in `scratch` (named as the file inside it)."""
    folder = scratch / f"unpacked-{zlib.crc32(str(path).encode()):08x}"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / inner_name(path)
    try:
        with _open(path) as src, target.open("wb") as out:
            shutil.copyfileobj(src, out, CHUNK)
    except (OSError, EOFError, zlib.error) as exc:
        raise DecompressError(_why(path, exc)) from exc
    except Exception as exc:  # zstandard.ZstdError, imported lazily
        if type(exc).__name__ != "ZstdError":
            raise
        raise DecompressError(_why(path, exc)) from exc
    return target


def _why(path: Path, exc: Exception) -> str:
    first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
    return (f"does not decompress as {compression(path)} ({first}): corrupt, or cut short while it was "
            "being written")
