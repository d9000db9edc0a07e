"""Installing a newly built DuckDB warehouse without ever losing the one in place.

A build is written to `<stem>-building-<pid>.duckdb` beside the target, checkpointed, opened
again and checked, and only then renamed over the target. What can go wrong around that:

- a stale `<target>.wal` (left by a crash of a process that had the old file open): DuckDB
  would replay it into the *new* file, which then will not open. The old file is checkpointed
  first (its WAL folded into it); a WAL that cannot be folded is moved aside, never replayed.
- a kill during the build leaves `-building-<pid>` files and `dia-load-<pid>-*` temporary
  folders behind: each build removes those whose process is gone.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

import duckdb

from dia_assets.platform import limits
from dia_assets.platform.files.temp import TEMP_KINDS, temp_prefix

log = logging.getLogger("dia.schema_creator")

def building_path(target: Path) -> Path:
    return target.with_name(f"{target.stem}-building-{os.getpid()}.duckdb")


def rejected_path(target: Path) -> Path:
    """Where a build that was not accepted is kept for inspection, beside the target."""
    return target.with_name(f"{target.stem}-rejected.duckdb")


def remove_database(path: Path) -> None:
    for p in (path, wal_of(path)):
        if p.exists():
            p.unlink()


def wal_of(path: Path) -> Path:
    return path.with_name(path.name + ".wal")


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_leftovers(target: Path) -> list[Path]:
    """Remove what killed builds left: their building files and temporary folders."""
    removed: list[Path] = []
    pattern = re.compile(re.escape(target.stem) + r"-building-(\d+)\.duckdb(\.wal)?$")
    for path in target.parent.glob(f"{target.stem}-building-*"):
        m = pattern.match(path.name)
        if m and not _alive(int(m.group(1))):
            path.unlink(missing_ok=True)
            removed.append(path)
    tmp = Path(tempfile.gettempdir())
    for prefix in TEMP_KINDS:
        for path in tmp.glob(f"{prefix}*"):
            m = re.match(re.escape(prefix) + r"(\d+)-", path.name)
            if m and path.is_dir() and not _alive(int(m.group(1))):
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
    if removed:
        log.info("removed leftovers of killed builds: %s", ", ".join(p.name for p in removed))
    return removed


def check_opens(path: Path) -> int:
    """Open the built file read-only and count its tables: a file that will not open is
    never swapped in."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return int(con.execute("SELECT count(*) FROM duckdb_tables()").fetchone()[0])
    finally:
        con.close()


def fold_stale_wal(target: Path) -> None:
    """Make sure no WAL beside the target can be replayed into the file that replaces it."""
    wal = wal_of(target)
    if not wal.exists():
        return
    if target.exists():
        try:
            con = duckdb.connect(str(target))
            try:
                con.execute("CHECKPOINT")
            finally:
                con.close()
        except duckdb.Error as exc:
            log.warning("could not checkpoint %s: %s", target, str(exc).splitlines()[0])
    if wal.exists():
        aside = wal.with_name(f"{wal.name}.stale-{os.getpid()}")
        os.replace(wal, aside)
        log.warning("moved stale write-ahead log %s aside to %s", wal.name, aside.name)


def install(building: Path, target: Path) -> None:
    """Rename the checked build over the target, atomically."""
    fold_stale_wal(target)
    os.replace(building, target)
    _fsync_dir(target.parent)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


T = TypeVar("T")
R = TypeVar("R")


@dataclass
class Settled(Generic[R, T]):
    """What `build_beside` did: the build's result, the check's verdict, where the file ended."""

    built: R
    verdict: T
    final: Path
    installed: bool
    digest: str  # content hash of the built file, wherever it ended


def build_beside(
    target: Path, build: Callable[[duckdb.DuckDBPyConnection], R], check: Callable[[Path], T],
    install_if: Callable[[T], bool], hook=None, start_from: Path | None = None,  # noqa: ANN001
    before_install: Callable[[T, Path, str], None] | None = None,
) -> Settled[R, T]:
    """The one way a warehouse is made: build into `<stem>-building-<pid>.duckdb` (empty, or a
    copy of `start_from`) with bounded memory, checkpoint once, open it again, check it while a
    thread hashes it, then install it over `target` or keep it as `<stem>-rejected.duckdb`.
    `before_install(verdict, built file, content hash)` runs just before the rename (the pending
    record of generation.py). Any failure removes the build and leaves `target` as it was."""
    clean_leftovers(target)
    building = building_path(target)
    remove_database(building)
    try:
        if start_from is not None:
            shutil.copyfile(start_from, building)
        # Beyond the memory limit DuckDB spills to a temporary folder that a later build
        # removes should this process be killed (clean_leftovers).
        with tempfile.TemporaryDirectory(prefix=temp_prefix("dia-load-")) as spill:
            con = duckdb.connect(str(building))
            try:
                limits.configure(con, Path(spill))
                built = build(con)
                con.execute("CHECKPOINT").fetchall()  # the build's one checkpoint
            finally:
                con.close()
        check_opens(building)
        verdict, digest = check_and_hash(building, check)
        install_it = install_if(verdict)
        if install_it and before_install is not None:
            before_install(verdict, building, digest)
        final, installed = settle(building, target, install_it, hook)
    except BaseException:
        remove_database(building)
        raise
    return Settled(built, verdict, final, installed, digest)


def check_and_hash(building: Path, check: Callable[[Path], T]) -> tuple[T, str]:
    """Run `check` on the finished build while a thread hashes it: the file is final from here
    on (a rename keeps its bytes) and hashlib releases the GIL on large blocks."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        hashing = pool.submit(content_hash, building)
        verdict = check(building)
        return verdict, hashing.result()


def content_hash(path: Path, chunk: int = 1 << 22) -> str:
    """blake2b of the warehouse file: the report names the exact file it describes."""
    digest = hashlib.blake2b(digest_size=16)
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def settle(building: Path, target: Path, install_it: bool, hook=None) -> tuple[Path, bool]:  # noqa: ANN001
    """Install the validated build over `target`, or keep it beside as `<stem>-rejected.duckdb`
    and leave the warehouse in place. Returns (the build's final path, installed)."""
    if hook:
        hook("swap")
    if install_it:
        install(building, target)
        if hook:
            hook("installed")
        return target, True
    final = rejected_path(target)
    remove_database(final)
    os.replace(building, final)
    return final, False
