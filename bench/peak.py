"""Run one measured step in a fresh process and report its peak memory (max RSS).

A fresh process per step keeps steps apart: the peak is the step's own (plus the Python
interpreter and its imports, about 150 MB), not the largest of everything before it."""

from __future__ import annotations

import resource
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from typing import TypeVar

T = TypeVar("T")


def _peak_rss() -> int:
    """This process's peak resident memory in bytes. VmHWM belongs to the process's own
    address space; ru_maxrss is not used because Linux carries it across fork and exec,
    so a child would report its parent's peak."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # elsewhere: best effort


def _with_peak(fn: Callable[..., T], args: tuple) -> tuple[T, int]:
    out = fn(*args)
    return out, _peak_rss()


def in_child(fn: Callable[..., T], *args: object) -> tuple[T, int]:
    """fn(*args) in a new process: (its result, its peak RSS in bytes)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_with_peak, fn, args).result()
