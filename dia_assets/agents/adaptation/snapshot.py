"""What the data folder holds now, and what changed since the last look."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel

from dia_assets.platform.files.discover import content_hash, discover
from dia_assets.platform.files.object_store import local_root
from dia_assets.platform.workspace import Workspace


class FolderChange(BaseModel):
    added: list[str] = []
    changed: list[str] = []
    deleted: list[str] = []

    @property
    def any(self) -> bool:
        return bool(self.added or self.changed or self.deleted)

    def describe(self) -> str:
        parts = [f"{label}: {', '.join(names)}" for label, names in
                 (("added", self.added), ("changed", self.changed), ("deleted", self.deleted)) if names]
        return "; ".join(parts) or "no change"


def snapshot(data_dir: Path) -> dict[str, str]:
    """Relative path -> sha256 of every data file."""
    out = {}
    for raw in discover(data_dir):
        out[str(raw.path.relative_to(data_dir))] = content_hash(raw.path)
    return out


def diff(before: dict[str, str], after: dict[str, str]) -> FolderChange:
    if before == after:  # the common tick, at 100,000 files: one comparison in C
        return FolderChange()
    return FolderChange(
        added=sorted(set(after) - set(before)),
        changed=sorted(k for k in set(after) & set(before) if after[k] != before[k]),
        deleted=sorted(set(before) - set(after)),
    )


def run_key(hashes: dict[str, str], before: dict[str, str] | None = None) -> str:
    """The key of one change, from the folder before to the folder after: a tick evaluated
    twice asks for the same run, so one change never runs twice. The folder before is part
    of the key, so reverting a file to an earlier content still rebuilds (the warehouse then
    holds the newer content; a key of the content alone would skip that build)."""
    state = [sorted(hashes.items()), sorted((before or {}).items())] if before is not None else sorted(hashes.items())
    digest = hashlib.sha256(json.dumps(state).encode()).hexdigest()
    return f"data-{digest[:16]}"


def interpreted_snapshot(workspace: Path, data_dir: str | Path) -> dict[str, str]:
    """Relative path -> sha256 of the files the workspace's interpretation was made from: what
    is built. A sensor starting without a cursor compares the folder with this, so it does not
    rebuild what `make demo` just built. Empty when there is no interpretation of this folder."""
    path = Workspace(workspace).interpretation
    if not path.exists():
        return {}
    from dia_assets.contracts.interpretation import Interpretation

    try:
        interp = Interpretation.read(path)
    except Exception:  # an unreadable artifact: treat the folder as never built
        return {}
    if Path(interp.data_dir).resolve() != local_root(data_dir).resolve():
        return {}
    return {f.path: f.content_hash for s in interp.sources for f in s.file_list()}
