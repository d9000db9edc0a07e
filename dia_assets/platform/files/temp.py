"""Temporary folders of the readers and the loader: named after their owner's pid, so the next
build can remove what a killed one left (schema_creator/swap.clean_leftovers)."""

from __future__ import annotations

import os

TEMP_KINDS = ("dia-load-", "dia-interpret-", "dia-pg-")


def temp_prefix(kind: str) -> str:
    return f"{kind}{os.getpid()}-"
