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


def _with_peak(fn: Callable[..., T], args: tuple) -> tuple[T, int]:
    out = fn(*args)
    return out, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def in_child(fn: Callable[..., T], *args: object) -> tuple[T, int]:
    """fn(*args) in a new process: (its result, its peak RSS in bytes)."""
    with ProcessPoolExecutor(max_workers=1, mp_context=get_context("spawn")) as pool:
        return pool.submit(_with_peak, fn, args).result()
