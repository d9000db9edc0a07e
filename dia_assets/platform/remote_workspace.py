"""A workspace on object storage (`DIA_WORKSPACE=s3://bucket/prefix`) as a local working copy.

Agents read and write the workspace as local files (DuckDB opens the warehouse file, the writer
lock is an `flock`). With the workspace on S3, each process works in a copy of its own: pulled
when a step (or `dia build`) starts, pushed when it ends, changed files only (object_store.py).
Steps on the multiprocess executor, or in pods of their own, then share state only through the
bucket, as they must: no step relies on a file another step left on its disk.

What stays local: the writer lock (exclusion across machines is the instance's one-writer run
queue: the `dia/workspace` tag), the data sensor's stat index (a cache; a lost one is rebuilt),
the Dagster instance folder and the embedded PostgreSQL (use DIA_MEMORY_URL and a real
DAGSTER_HOME beside an S3 workspace).
"""

from __future__ import annotations

import atexit
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dia_assets.platform.files import object_store
from dia_assets.platform.workspace import Workspace

_NAMES = Workspace(Path())  # the tree's names, relative
LOCAL_ONLY = (_NAMES.writer_lock.as_posix(), *(f"{p.as_posix()}/" for p in (_NAMES.sensor_index, _NAMES.dagster_home,
                                                                              _NAMES.pgdata)))

_copies: dict[tuple[str, int], Path] = {}  # (url, pid): a forked child makes a copy of its own


def working_copy(location: str | os.PathLike[str]) -> Path:
    """Where this process reads and writes the workspace `location`: the path itself, or this
    process's copy of an s3:// workspace (`pull` fills it). The name is fixed for the process
    (the DuckDB resource names the warehouse in it when the definitions load); `release` and
    the process's exit remove the folder."""
    if not object_store.is_url(location):
        return Path(location)
    url, pid = str(location).rstrip("/"), os.getpid()
    folder = Path(f"{object_store.mirror_folder(url, 'workspace')}-{pid}")
    if (url, pid) not in _copies:
        shutil.rmtree(folder, ignore_errors=True)  # a pid reused after a killed process
        _copies[url, pid] = folder
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def release(location: str | os.PathLike[str]) -> None:
    """Remove this process's copy (after its push): a multiprocessing child ends without the
    exit hooks, and the next step in this process pulls afresh."""
    if object_store.is_url(location):
        shutil.rmtree(working_copy(location), ignore_errors=True)


def pull(location: str | os.PathLike[str]) -> Path:
    """The working copy, brought up to date with the bucket (a local workspace: as is)."""
    copy = working_copy(location)
    if object_store.is_url(location):
        object_store.pull(str(location), copy, exclude=LOCAL_ONLY)
    return copy


def push(location: str | os.PathLike[str]) -> list[str]:
    """Send this process's changes to the bucket; the keys sent (none for a local workspace)."""
    if not object_store.is_url(location):
        return []
    return object_store.push(working_copy(location), str(location), exclude=LOCAL_ONLY)


SENSOR_READS = (_NAMES.interpretation.as_posix(), _NAMES.attempt.as_posix(), _NAMES.overrides.as_posix())
# the drift sensor: both interpretations, the saved answers it re-plans, the manifest and report
# whose checks it fails, and what it writes (drift reports, the review list)
DRIFT_FILES = (_NAMES.interpretation.as_posix(), f"{_NAMES.previous_interpretation.parent.as_posix()}/",
               f"{_NAMES.queries_dir.as_posix()}/", _NAMES.manifest.as_posix(), _NAMES.report.as_posix(),
               f"{_NAMES.review_dir.as_posix()}/",
               f"{_NAMES.drift_dir.as_posix()}/")
QUALITY_FILES = (f"{_NAMES.drift_dir.as_posix()}/",)  # the quality sensor's diagnosis cites the latest drift


def sensor_view(location: str | os.PathLike[str], only: tuple[str, ...] = SENSOR_READS, kind: str = "sensor") -> Path:
    """What a sensor tick reads of the workspace, as a local folder: the workspace itself, or
    for an s3:// workspace a folder kept on this machine (one per `kind`) with the files in
    `only` pulled again each tick (by default the interpretation: what is built; the attempt
    record: is the requested run alive; the expert's overrides: the review gate). Its
    state/sensor holds the data sensor's stat index (a cache: when lost, the files are hashed
    again)."""
    if not object_store.is_url(location):
        return Path(location)
    folder = object_store.mirror_folder(str(location).rstrip("/"), kind)
    object_store.pull(str(location), folder, exclude=LOCAL_ONLY, only=only)
    return folder


@contextmanager
def sensor_edit(location: str | os.PathLike[str], only: tuple[str, ...], kind: str) -> Iterator[Path]:
    """A sensor view the tick also writes: what it changed is pushed when it returns."""
    folder = sensor_view(location, only, kind)
    yield folder
    if object_store.is_url(location):
        object_store.push(folder, str(location), exclude=LOCAL_ONLY)


@contextmanager
def synced(location: str | os.PathLike[str]) -> Iterator[Path]:
    """The workspace as a local folder for one step: pulled before, pushed after (after a
    failure too: the attempt record and last error are what the next reader needs)."""
    copy = pull(location)
    try:
        yield copy
    finally:
        push(location)
