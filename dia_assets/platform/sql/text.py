"""SQL text in one place: transpiling between dialects, one canonical spelling of a statement
and of an identifier, and the Markdown fence models wrap SQL in."""

from __future__ import annotations

import re
import unicodedata

import sqlglot

# longer statements are refused by the gate unparsed, and compared as text
MAX_SQL_CHARS = 100_000


def normalize_name(name: str) -> str:
    """One spelling per identifier: quotes gone, Unicode look-alikes folded (NFKC), lower case."""
    return unicodedata.normalize("NFKC", str(name)).strip().strip('"`[]').casefold()


def clean_sql(sql: str) -> str:
    """Models sometimes wrap SQL in a Markdown fence inside the tool argument."""
    text = sql.strip()
    fenced = re.fullmatch(r"```[a-zA-Z]*\s*\n?(.*?)\n?```", text, flags=re.S)
    return (fenced.group(1) if fenced else text).strip()


def normalize_sql(sql: str, dialect: str) -> str:
    """Canonical text for resubmission control: parsed and re-generated (keywords, identifier
    case, whitespace and comments normalized; literals kept)."""
    text = sql
    if len(sql) <= MAX_SQL_CHARS:  # longer: compared as text; the gate refuses it anyway
        try:
            text = sqlglot.parse_one(sql, read=dialect).sql(dialect=dialect, normalize=True, comments=False)
        except Exception:  # noqa: BLE001 - unparseable or too deep: compare the text; the gate refuses it
            text = sql
    # identifiers are case-folded by `normalize`; string literals keep their case
    return re.sub(r"\s+", " ", text).strip().rstrip(";")


def transpile(sql: str, read: str, write: str) -> str:
    return sqlglot.transpile(sql, read=read, write=write, pretty=True)[0]


def transpile_all(sql: str, read: str, targets: tuple[str, ...] = ("snowflake", "bigquery")) -> dict[str, str]:
    out: dict[str, str] = {}
    for target in targets:
        if target == read:
            continue
        try:
            out[target] = transpile(sql, read, target)
        except sqlglot.errors.SqlglotError as err:
            out[target] = f"-- not transpilable: {err}"
    return out

