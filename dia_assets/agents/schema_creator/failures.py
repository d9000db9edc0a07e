"""A failed build in one line that names the cause: disk full (and where), the PostgreSQL
warehouse unreachable, or the error's own first line. The CLI prints it instead of a traceback;
the attempt record and the STALE mark carry it."""

from __future__ import annotations

import errno
import re

FULL = (errno.ENOSPC, errno.EDQUOT)
MAX = 300


def disk_full(exc: BaseException) -> str | None:
    """The path a write failed on for lack of space ('' when unknown), or None."""
    for err in _chain(exc):
        if isinstance(err, OSError) and err.errno in FULL:
            return str(err.filename or "")
        text = str(err)
        if "No space left on device" in text or "Disk quota exceeded" in text:
            m = re.search(r'file "([^"]+)"', text) or re.search(r"'([^']+)'", text)
            return m.group(1) if m else ""
    return None


def outage(exc: BaseException) -> str | None:
    """The first line of a lost or refused PostgreSQL connection, or None."""
    for err in _chain(exc):
        kind = type(err)
        if kind.__module__.startswith("psycopg") and kind.__name__ in (
                "OperationalError", "InterfaceError", "AdminShutdown", "ConnectionTimeout", "CrashShutdown"):
            return _first(err) or kind.__name__
    return None


def one_line(exc: BaseException) -> str:
    path = disk_full(exc)
    if path is not None:
        return f"disk full writing {path or '(unknown file)'}: no space left on device"
    lost = outage(exc)
    if lost is not None:
        return f"the PostgreSQL warehouse is unavailable: {lost}"
    text = _first(exc)
    name = type(exc).__name__
    return (f"{name}: {text}" if text and not text.startswith(name) else text or name)[:MAX]


def _first(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else ""


def _chain(exc: BaseException) -> list[BaseException]:
    out: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and seen not in out:
        out.append(seen)
        seen = seen.__cause__ or seen.__context__
    return out
