"""Where the embedded PostgreSQL keeps its data, so that starting it changes no folder's mode.

As root, pgserver runs PostgreSQL as a `pgserver` system user and, so that this user can
reach its data folder, adds read and traverse permission for group and others to every
parent of that folder up to `/`. For the default `<workspace>/pgdata` that turned a private
(0700) workspace and its parent into 0755: the warehouse and every artifact became readable
by every local user.

So, as root, when a parent of the requested folder lacks that permission, the data folder is
created under DIA_PGDATA_HOME instead (default `/var/lib/dia/pgdata`, whose parents are
world-traversable already) as `<parent name>-<hash of the requested path>`, and the
requested path becomes a symlink to it: `<workspace>/pgdata` still leads to the data, and
pgserver only ever widens the home's parents. `guard_modes` checks the requested path's
parents after the start and puts back any mode that changed anyway.

Not root, pgserver widens nothing: the folder stays where it was asked for. A data folder
that already exists as a real directory is used in place (with a warning when its parents
are private), as before.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import stat
from pathlib import Path

from dia_assets.platform.settings import get_settings

_log = logging.getLogger(__name__)
OTHERS_RX = stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH


def as_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def pgdata_home() -> Path:
    """Where relocated data folders live (DIA_PGDATA_HOME)."""
    return get_settings().pgdata_home.expanduser().absolute()


def private_parents(path: Path) -> list[Path]:
    """Existing parents of `path` that pgserver, as root, would widen (no g+rx or o+rx)."""
    return [p for p in Path(path).absolute().parents if p.exists() and (p.stat().st_mode & OTHERS_RX) != OTHERS_RX]


def place(pgdata: Path | str) -> Path:
    """The real data folder to start the server on for the requested `pgdata`."""
    requested = Path(pgdata).expanduser().absolute()
    if requested.is_symlink():  # placed on an earlier start
        target = requested.resolve()
        target.mkdir(parents=True, exist_ok=True)
        return target
    if not as_root():
        return requested.resolve()
    if requested.exists():
        if private_parents(requested):
            _log.warning("the embedded PostgreSQL data folder %s is a real folder under private parents: "
                         "starting it as root widens their modes; move it to %s and leave a symlink",
                         requested, pgdata_home())
        return requested.resolve()
    if not private_parents(requested):
        return requested.resolve()
    digest = hashlib.sha256(str(requested).encode("utf-8")).hexdigest()[:16]
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", requested.parent.name) or "workspace"
    target = pgdata_home() / f"{name}-{digest}"
    target.mkdir(parents=True, exist_ok=True)
    target.chmod(0o700)
    requested.parent.mkdir(parents=True, exist_ok=True)
    try:
        requested.symlink_to(target, target_is_directory=True)
    except FileExistsError:  # another process placed it first: fine if it points to the same folder
        if not (requested.is_symlink() and requested.resolve() == target.resolve()):
            raise
    _log.info("embedded PostgreSQL data for %s kept in %s (its parents stay private)", requested, target)
    return target


def parent_modes(pgdata: Path | str) -> dict[Path, int]:
    """The modes of the requested folder's existing parents, to compare after a start."""
    return {p: stat.S_IMODE(p.stat().st_mode) for p in Path(pgdata).expanduser().absolute().parents if p.exists()}


def guard_modes(before: dict[Path, int], real: Path) -> list[str]:
    """Put back every parent mode that changed since `before`, except on the real data
    folder's own path (pgserver's user must traverse that)."""
    needed = set(real.parents)
    restored = []
    for path, mode in before.items():
        if path in needed or not path.exists():
            continue
        now = stat.S_IMODE(path.stat().st_mode)
        if now != mode:
            path.chmod(mode)
            restored.append(f"{path} {now:o} -> {mode:o}")
    if restored:
        _log.warning("starting the embedded PostgreSQL changed folder modes; restored: %s", restored)
    return restored
