"""The profile's reservoir sample of a long table, fetched with as little re-reading as it can.

The reservoir draws row ids only (its choice depends on positions, not values: the same
rows, in the same order, as sampling every column), then fetches those rows: the
full-width scan through the sampler cost more than pass A at 10M rows.

The fetch reads every column of almost every row group (5,000 rows fall in nearly every
block). A table larger than the memory limit is partly spilled, and one ascending scan
floods the buffer pool: every block it loads evicts one it needs next (10M rows under 1GB:
1.4 GB read back and 1.3 GB written for 5,000 rows). The fetch goes in slices of row ids
from the last (the blocks the read left in memory) to the first, so each spilled block is
loaded once and only blocks already fetched are evicted (0.6-0.9 GB read back)."""

from __future__ import annotations

import duckdb

SAMPLE_ROWS = 5_000
SLICE_ROWS = 1 << 20  # row ids per fetch query: one query up to 1M rows


def draw_sample(con: duckdb.DuckDBPyConnection, qt: str, names: list[str], target: str) -> None:
    """Create temp table `target`: SAMPLE_ROWS rows of `qt` (columns `names`), in the
    reservoir's order."""
    reservoir = f"USING SAMPLE reservoir({SAMPLE_ROWS} ROWS) REPEATABLE (7)"
    if "rowid" in {n.lower() for n in names}:  # a column named rowid hides the row id
        con.execute(f"CREATE OR REPLACE TEMP TABLE {target} AS SELECT * FROM {qt} {reservoir}")
        return
    ids, order = f"{target}__ids", _unused("__k", names)
    con.execute(f"CREATE OR REPLACE TEMP TABLE {ids} AS SELECT rowid AS __r, row_number() OVER () AS __k "
                f"FROM {qt} {reservoir}")
    con.execute(f"CREATE OR REPLACE TEMP TABLE {target} AS SELECT 0::BIGINT AS {order}, * FROM {qt} LIMIT 0")
    last = con.execute(f"SELECT max(__r) FROM {ids}").fetchone()[0] or 0
    for start in reversed(range(0, last + 1, SLICE_ROWS)):
        within = f"BETWEEN {start} AND {start + SLICE_ROWS - 1}"
        con.execute(
            f"INSERT INTO {target} SELECT __s.__k, __t.* FROM {qt} __t JOIN (SELECT __r, __k FROM {ids} "
            f"WHERE __r {within}) __s ON __t.rowid = __s.__r WHERE __t.rowid {within}"
        )
    con.execute(f"CREATE OR REPLACE TEMP TABLE {target} AS SELECT * EXCLUDE ({order}) FROM {target} ORDER BY {order}")
    con.execute(f"DROP TABLE {ids}")


def _unused(stem: str, names: list[str]) -> str:
    """`stem`, suffixed until no column of the table is called that (case-insensitively)."""
    taken = {n.lower() for n in names}
    name, i = stem, 0
    while name.lower() in taken:
        i += 1
        name = f"{stem}{i}"
    return name
