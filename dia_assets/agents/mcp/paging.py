"""Paging a result for an MCP host: an opaque cursor and the statement that reads one page.

The server keeps no state between calls, so a cursor carries the offset of the next page
and a fingerprint of the statement it belongs to (a cursor handed back with another
statement is refused). Each page re-runs the statement with a total order appended (its own
ORDER BY first, then every output column by position) and LIMIT/OFFSET, so pages neither
repeat nor skip rows even when the engine returns unordered rows in a different order on
each run (rows that are equal in every column are interchangeable).
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from sqlglot import exp


class BadCursor(ValueError):
    """A cursor that is not ours, or belongs to another statement."""


def fingerprint(text: str) -> str:
    """A short hash naming what a cursor pages through."""
    return hashlib.sha256(" ".join(text.split()).encode("utf-8")).hexdigest()[:16]


def encode_cursor(what: str, offset: int) -> str:
    raw = json.dumps({"v": 1, "of": fingerprint(what), "at": offset}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, what: str) -> int:
    """The offset a cursor points at (0 without one); BadCursor when it is not for `what`."""
    if not cursor:
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        offset = int(data["at"])
        owner = data["of"]
    except (ValueError, TypeError, KeyError):
        raise BadCursor("cursor is not one this server handed out; start again without a cursor") from None
    if owner != fingerprint(what) or offset < 0:
        raise BadCursor("cursor belongs to another statement or listing; pass the same input it came with, "
                        "or start again without a cursor")
    return offset


def paged_statement(tree: exp.Expression, output_columns: int, offset: int, size: int, dialect: str) -> str:
    """`tree` (a checked SELECT) reading rows offset..offset+size (one more, to know whether
    another page follows), in a total order. A statement with its own LIMIT/OFFSET keeps
    its window: the page is cut from inside it by adding to its numbers."""
    positions = [exp.Literal.number(i) for i in range(1, output_columns + 1)]
    query: Any = tree.copy()
    if not isinstance(query, exp.Query):
        raise ValueError("only a SELECT can be paged")
    own_limit, own_offset = _number(query.args.get("limit")), _number(query.args.get("offset"))
    if query.args.get("fetch") or (query.args.get("limit") and own_limit is None) or \
            (query.args.get("offset") and own_offset is None):
        # a window we cannot compute with: page over it (its rows, in column order)
        query = exp.select("*").from_(query.subquery("dia_page"))
        own_limit, own_offset = None, None
    query = query.order_by(*positions, append=True, copy=False)
    take = size + 1 if own_limit is None else max(0, min(size + 1, own_limit - offset))
    return query.limit(take, copy=False).offset((own_offset or 0) + offset, copy=False).sql(dialect=dialect)


def _number(node: exp.Expression | None) -> int | None:
    """The whole number a LIMIT or OFFSET clause gives, None when it is not a literal."""
    if node is None:
        return None
    value = node.args.get("expression") if isinstance(node, exp.Limit | exp.Offset) else node
    if isinstance(value, exp.Literal) and value.is_int:
        return int(value.this)
    return None


def page(items: list[Any], cursor: str | None, what: str, size: int) -> tuple[list[Any], str | None]:
    """One page of an in-memory listing and the cursor of the next (None on the last)."""
    start = decode_cursor(cursor, what)
    chunk = items[start:start + size]
    more = start + size < len(items)
    return chunk, encode_cursor(what, start + size) if more else None
