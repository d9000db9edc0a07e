"""The gate's allow-lists for SQLite: vetted anonymous functions, data types, system columns."""

from __future__ import annotations

from sqlglot import exp

from dia_assets.platform.sql.allowlist.common import COMMON, PORTABLE

ANONYMOUS: frozenset[str] = frozenset(COMMON - {"now"} | {
    "ifnull", "instr", "char", "hex", "unhex", "likelihood", "likely", "unlikely",
    "quote", "soundex", "strftime", "date", "time", "datetime",
    "julianday", "unixepoch", "printf", "format", "total", "iif", "sign",
})

TYPES: frozenset[exp.DataType.Type] = frozenset(PORTABLE)

SYSTEM_COLUMNS: frozenset[str] = frozenset({"rowid", "oid", "_rowid_"})
