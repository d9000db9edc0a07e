"""Result values made comparable across engines: DECIMAL as the nearest float, dates and times as
ISO text (SQLite returns text), NaN a marker, lists/structs/JSON canonical JSON text, optional
half-up rounding. Shared by the verifier, cross-checks and evaluation (metrics.py says why)."""

from __future__ import annotations

import datetime as dt
import json
import math
import uuid
from collections.abc import Iterable, Sequence
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

Row = tuple[Any, ...]
NAN = "<NaN>"


def _round(value: Decimal, decimals: int) -> float:
    try:
        return float(value.quantize(Decimal(1).scaleb(-decimals), rounding=ROUND_HALF_UP))
    except InvalidOperation:  # too many digits for the context: leave it
        return float(value)


def normalize_value(value: Any, decimals: int | None = None) -> Any:
    """A hashable, engine-neutral form of one cell."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return NAN
        if decimals is not None and math.isfinite(value):
            return _round(Decimal(repr(value)), decimals)
        return value
    if isinstance(value, Decimal):
        if value.is_nan():
            return NAN
        if decimals is not None and value.is_finite():
            return _round(value, decimals)
        return float(value)
    if isinstance(value, dt.datetime):
        # an instant (TIMESTAMPTZ, Spark's TIMESTAMP) as UTC wall-clock time, the form of a plain
        # TIMESTAMP in a UTC session (DIA's builds and connections run in UTC): engines differ
        # in which of the two a date_trunc or a stored column gives back, not in the time
        if value.tzinfo is not None and value.utcoffset() is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value.isoformat(sep=" ")
    if isinstance(value, (dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return str(value)
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, (list, tuple, dict, set)):
        return json.dumps(_plain(value, decimals), sort_keys=True, default=str)
    try:
        hash(value)
        return value
    except TypeError:
        return str(value)


def _plain(value: Any, decimals: int | None) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v, decimals) for k, v in value.items()}
    if isinstance(value, (list, tuple, set)):
        return [_plain(v, decimals) for v in value]
    out = normalize_value(value, decimals)
    return out.hex() if isinstance(out, bytes) else out


def normalize_rows(rows: Iterable[Sequence[Any]], decimals: int | None = None) -> list[Row]:
    return [tuple(normalize_value(v, decimals) for v in row) for row in rows]
