"""Read a delimited file while another thread scans the whole of it.

A reader needs the file's text scan (UTF-8 or not, NUL bytes or not) before it can pick
its path, and the scan reads every byte. Most files are clean UTF-8: when the head is, the
read starts at once on that guess while the scan runs beside it (DuckDB and hashlib release
the GIL), and is made again, knowing, in the rare case the scan says otherwise. The
interpreter scans and hashes in that thread (`read_on_clean_guess`); the loader only scans
(`read_scanned`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb

from dia_assets.platform.files.compressed import compression
from dia_assets.platform.files.discover import CLEAN, TextScan, looks_clean, scan_text
from dia_assets.platform.files.readers import LoadedSource, read_source
from dia_assets.platform.naming import quote_ident

log = logging.getLogger("dia.interpreter")


def read_on_clean_guess(
    con: duckdb.DuckDBPyConnection, path: Path, fmt: str, name: str, table: str, scratch: Path,
    scan: Callable[[], TextScan],
) -> list[LoadedSource] | None:
    """The read of `path` made while `scan()` (which waits for the scanning thread) runs, if
    the scan says CLEAN; None when no early read applies or the guess was wrong (the caller
    reads again with the scan). A failed early read is dropped too: read again, a failure is
    reported knowing the scan."""
    early = None
    if fmt == "csv" and looks_clean(path):
        try:
            early = read_source(con, path, fmt, name, table, scratch, CLEAN)
        except Exception:  # noqa: BLE001 - read again after the scan, where a failure is reported
            log.debug("early read of %s failed", path, exc_info=True)
            forget_read(con, table)
    if scan() != CLEAN and early is not None:
        forget_read(con, table)
        return None
    return early


def read_scanned(
    con: duckdb.DuckDBPyConnection, path: Path, fmt: str, name: str, table: str, scratch: Path
) -> list[LoadedSource]:
    """`read_source` of a file, its text scan made beside the read (workbooks and Parquet
    need none)."""
    if fmt not in ("csv", "json", "jsonl") or compression(path):  # a compressed file's copy is scanned
        return read_source(con, path, fmt, name, table, scratch)
    with ThreadPoolExecutor(max_workers=1) as pool:
        scanning = pool.submit(scan_text, path)
        early = read_on_clean_guess(con, path, fmt, name, table, scratch, scanning.result)
        return early if early is not None else read_source(con, path, fmt, name, table, scratch, scanning.result())


def forget_read(con: duckdb.DuckDBPyConnection, table: str) -> None:
    """Drop a read: its table and the reject tables the CSV reader keeps beside it."""
    for name in (table, f"{table}__rejects", f"{table}__scan"):
        con.execute(f"DROP TABLE IF EXISTS {quote_ident(name)}")
