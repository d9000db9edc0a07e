"""The data sensor's memory: what was checked, what is being built, what is still moving.

The cursor moves past a change only when the run requested for it finished its checks
(succeeded, or validated the data and refused it). A run that failed, was canceled or vanished
(its process killed with the daemon) is asked for again on the next tick, a bounded number of
times, so an interrupted build is redone after a restart instead of being forgotten. No Dagster
here: the sensor (dia_assets/dagster/sensors/data_sensors.py) tells what became of the run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from dia_assets.agents.adaptation.folder_index import StateFiles
from dia_assets.agents.adaptation.settle import Seen
from dia_assets.agents.adaptation.snapshot import FolderChange, diff, run_key

# success: the run ended well; checked: it validated the data and refused it (a verdict, not an
# accident: asking again gives the same answer); running: queued or in progress; failed: it
# failed before its verdict or was canceled; gone: no such run, or its process died with it.
RunOutcome = Literal["success", "checked", "running", "failed", "gone"]
FINISHED: set[RunOutcome] = {"success", "checked"}


class Pending(BaseModel):
    """The change a run was requested for."""

    key: str  # the change's key (run_key of the folder after and before); the runs' dia/request tag
    run_key: str  # the latest request's run key: `key`, then `key-retry1`, ...
    snapshot: dict[str, str]  # relative path -> content hash the run was asked to build
    tries: int = 1  # runs requested for this change
    trigger: str | None = None  # why, when it is more than a change of files: "data folder changed: A -> B"


class DataCursor(BaseModel):
    done: dict[str, str]  # the folder as of the last run that finished its checks (or the built baseline)
    seen: dict[str, Seen] = {}  # size and mtime of the files still settling, or settled since
    pending: Pending | None = None
    # the data folder and workspace this state is about (data_folder.folder_id); None: a cursor
    # of an older DIA, taken to be about the current folder
    folder: str | None = None
    switched_from: str | None = None  # the folder before a switch, until a run is requested for the new one
    # the digest of the stat index this tick left (folder_index.StateFiles): which files need
    # no hashing next tick. Kept out of the cursor, which stays small at 100,000 files
    index: str | None = None
    # the digest of the file list whose raw_files partitions the last tick reconciled with the
    # instance: the same files need no query of its 100,000 partitions (the requests went out with it)
    partitioned: str | None = None

    def about(self, folder: str) -> bool:
        """Whether this state describes `folder`: state of another folder is no baseline."""
        return self.folder in (None, folder)

    @classmethod
    def parse(cls, text: str | None, store: StateFiles | None = None) -> DataCursor | None:
        """The cursor a tick stored, or None. A cursor of an older DIA (path -> hash) is the
        folder it last requested a build for: taken as done, as that DIA did. The large parts
        of a cursor about many files are read from `store` (see `dump`); None when one of
        them is gone (the workspace was cleared): the tick starts over, as on a first tick."""
        if not text:
            return None
        data = json.loads(text)
        if isinstance(data, dict) and "done" in data:
            try:
                for parent, name in _large_parts(data):
                    parent[name] = _inline(parent[name], store)
            except LookupError:
                return None
            return cls.model_validate(data)
        return cls(done=dict(data))

    def dump(self, store: StateFiles | None = None) -> str:
        """The cursor as stored. With a `store`, a map of more than `INLINE_MAX` files (the
        folder done, the pending change's, the files settling) is written to a file of its own,
        named by its digest, and the cursor holds the digest: at 100,000 files the cursor stays
        under a kilobyte (it was 9 MB, 18 MB while a change was pending) and Dagster stores
        and ships it on every tick that moves it."""
        data = self.model_dump(mode="json")
        if store is None or not any(len(parent[name]) > INLINE_MAX for parent, name in _large_parts(data)):
            return self.model_dump_json()
        for parent, name in _large_parts(data):
            if len(parent[name]) > INLINE_MAX:
                parent[name] = {REF: store.save_snapshot(parent[name])}
        return json.dumps(data, separators=(",", ":"))


INLINE_MAX = 1000  # files in a map kept in the cursor itself
REF = "$stored"  # {"$stored": digest}: a map stored beside the cursor (StateFiles.save_snapshot)


def _large_parts(data: dict) -> list[tuple[dict, str]]:
    """Where a dumped cursor holds a map per file: (the object, its key)."""
    out = [(data, "done"), (data, "seen")]
    if isinstance(data.get("pending"), dict):
        out.append((data["pending"], "snapshot"))
    return [(parent, name) for parent, name in out if isinstance(parent.get(name), dict)]


def _inline(value: dict, store: StateFiles | None) -> dict:
    """A map of the cursor, read from the store when the cursor holds its digest only."""
    if set(value) != {REF}:
        return value
    if store is None:
        raise ValueError("this cursor keeps its large maps beside it: parse it with the StateFiles (state/sensor)")
    loaded = store.load_snapshot(value[REF])
    if loaded is None:
        raise LookupError(value[REF])
    return loaded


@dataclass
class Decision:
    """What one tick does: request `request` (new change or retry), or wait (`wait` says why)."""

    cursor: DataCursor
    change: FolderChange
    request: Pending | None = None
    wait: str | None = None


def absorb(cursor: DataCursor, outcome: RunOutcome | None) -> DataCursor:
    """The cursor once the pending run's outcome is known: past its change when it finished
    its checks, unchanged otherwise."""
    if cursor.pending is not None and outcome in FINISHED:
        return cursor.model_copy(update={"done": cursor.pending.snapshot, "pending": None})
    return cursor


def decide(cursor: DataCursor, after: dict[str, str], outcome: RunOutcome | None, max_tries: int) -> Decision:
    """The tick's decision, from the folder now (`after`, settled files only) and what became
    of the pending run (`outcome`; None when there is none)."""
    pending = cursor.pending
    if pending is not None and outcome == "running":
        return Decision(cursor, FolderChange(), wait=f"waiting for run {pending.run_key} (the change it builds: "
                        f"{diff(cursor.done, pending.snapshot).describe()}) to finish")
    cursor = absorb(cursor, outcome)
    pending = cursor.pending
    change = diff(cursor.done, after)
    if not change.any:  # the folder is back where the last checked run left it
        return Decision(cursor.model_copy(update={"pending": None}), change)
    key = run_key(after, cursor.done)
    if pending is None or pending.key != key:
        ask = Pending(key=key, run_key=key, snapshot=after)
        return Decision(cursor.model_copy(update={"pending": ask}), change, request=ask)
    if pending.tries >= max_tries:
        return Decision(cursor, change, wait=f"run {pending.run_key} {outcome} and this change was tried "
                        f"{pending.tries} time(s); waiting for a new change in the data folder")
    ask = pending.model_copy(update={"run_key": f"{key}-retry{pending.tries}", "tries": pending.tries + 1})
    return Decision(cursor.model_copy(update={"pending": ask}), change, request=ask)
