"""The columns DIA adds to the tables it builds: provenance on staging and reject tables, and
the reject reason. Their own module because the width limit (width.py) counts them and the SQL
generator writes them."""

from __future__ import annotations

PROVENANCE = [
    ("_source_file", "VARCHAR"),
    ("_source_row", "BIGINT"),
    ("_loaded_at", "TIMESTAMP"),
    ("_content_hash", "BIGINT"),
]
# _row_kept: the row reached the refined table with the failing value(s) set to NULL.
REJECT_EXTRA = [("_reason", "VARCHAR"), ("_raw_line", "VARCHAR"), ("_row_kept", "BOOLEAN")]
