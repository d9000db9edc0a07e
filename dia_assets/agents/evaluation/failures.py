"""Failure classes of DIA App. C, computed from result shapes and the SQL (never by a model).

For an instance whose gold runs but whose prediction does not match:

- `grounding`: the predicted SQL names a table or column the database does not have (found
  with sqlglot against the live schema, or in the engine's error message);
- `execution`: no SQL was submitted (App. C.3 counts malformed or missing submissions here),
  or it failed or timed out for another reason;
- `output_convention`: it ran and the values are right but the shape is not: columns in another
  order, extra or missing columns (the gold columns are found among the predicted ones, or the
  predicted among the gold), or rows in another order where the question asks for one;
- `reasoning`: the rest: it ran, with the wrong rows or values.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any

from dia_assets.platform.sql.rows import normalize_rows

MAX_MAPPINGS = 5000

_UNKNOWN_PATTERNS = [
    r"no such (?:column|table)",  # SQLite
    r"referenced column .* not found",  # DuckDB
    r"table with name .* does not exist",  # DuckDB
    r"referenced table .* not found",  # DuckDB
    r"column .* does not exist",  # PostgreSQL
    r"relation .* does not exist",  # PostgreSQL
    r"does not have a column named",  # DuckDB: alias.column
    r"catalog error",  # DuckDB: unknown table/function
]


def unknown_identifiers(sql: str, schema: dict[str, list[str]], dialect: str) -> list[str]:
    """Tables and columns the SQL names that the schema does not have ([] when all resolve
    or the SQL cannot be analysed)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import OptimizeError, SqlglotError
    from sqlglot.optimizer.qualify import qualify

    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except SqlglotError:
        return []
    if tree is None:
        return []
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    tables = {t.lower() for t in schema}
    unknown = sorted({f"table {t.name}" for t in tree.find_all(exp.Table)
                      if t.name and t.name.lower() not in tables and t.name.lower() not in ctes
                      and not t.args.get("db")})
    if unknown:
        return unknown
    mapping = {t: {c: "TEXT" for c in cols} for t, cols in schema.items()}
    try:
        qualify(tree.copy(), schema=mapping, dialect=dialect, validate_qualify_columns=True,
                identify=False)
    except OptimizeError as err:
        text = str(err)
        for pattern in (r"Unknown column: ['\"]?([\w.]+)", r"Column '([^']+)' could not be resolved",
                        r"Unknown table: ['\"]?([\w.]+)"):
            match = re.search(pattern, text)
            if match:
                kind = "table" if "table" in pattern else "column"
                return [f"{kind} {match.group(1)}"]
        return []
    except Exception:
        return []
    return []


def error_names_unknown_identifier(error: str | None) -> bool:
    text = (error or "").lower()
    return any(re.search(p, text) for p in _UNKNOWN_PATTERNS)


def _column_values(rows: list[tuple[Any, ...]], width: int) -> list[frozenset[Any]]:
    return [frozenset(r[j] for r in rows) for j in range(width)]


def _projection_matches(big: list[tuple[Any, ...]], small: list[tuple[Any, ...]], big_width: int,
                        small_width: int) -> tuple[int, ...] | None:
    """An injective map of the small result's columns onto the big one's under which the big
    result, projected, equals the small one (set semantics). None when there is none."""
    if small_width == 0 or big_width < small_width:
        return None
    big_cols, small_cols = _column_values(big, big_width), _column_values(small, small_width)
    candidates = [[k for k in range(big_width) if big_cols[k] == small_cols[j]] for j in range(small_width)]
    if not all(candidates):
        return None
    target = set(small)
    for n, combo in enumerate(itertools.product(*candidates)):
        if n >= MAX_MAPPINGS:
            break
        if len(set(combo)) != len(combo):
            continue
        if {tuple(r[k] for k in combo) for r in big} == target:
            return combo
    return None


def convention_detail(pred_rows: Sequence[Sequence[Any]], pred_columns: Sequence[str],
                      gold_rows: Sequence[Sequence[Any]], gold_columns: Sequence[str],
                      order_matters: bool = False, decimals: int | None = None) -> str | None:
    """Why the prediction is an output-convention failure against this gold, or None."""
    p, g = normalize_rows(pred_rows, decimals), normalize_rows(gold_rows, decimals)
    pw = len(pred_columns) or (len(p[0]) if p else 0)
    gw = len(gold_columns) or (len(g[0]) if g else 0)
    if pw == gw and set(p) == set(g):
        return "row order differs from the order the question asks for" if order_matters else None
    if not p or not g:
        return None
    if pw >= gw:
        combo = _projection_matches(p, g, pw, gw)
        if combo is not None:
            if pw == gw:
                return f"same values, columns in another order (gold column i is predicted column {list(combo)})"
            return f"{pw - gw} extra column(s): the gold columns are predicted columns {list(combo)}"
    else:
        combo = _projection_matches(g, p, gw, pw)
        if combo is not None:
            return f"{gw - pw} missing column(s): the predicted columns are gold columns {list(combo)}"
    return None


def classify(
    *,
    sql: str | None,
    pred_ok: bool,
    pred_error: str | None,
    pred_timeout: bool,
    pred_rows: Sequence[Sequence[Any]] | None,
    pred_columns: Sequence[str],
    golds: Sequence[tuple[Sequence[Sequence[Any]], Sequence[str]] | None],
    schema: dict[str, list[str]] | None,
    dialect: str,
    order_matters: bool = False,
    decimals: int | None = None,
    status: str = "answered",
) -> tuple[str, str]:
    """(class, detail) of a failed, non-broken instance."""
    if not sql or not sql.strip():
        why = f": {pred_error}" if pred_error else ""
        return "execution", f"no SQL submitted (solver status {status}{why})"[:300]
    if not pred_ok:
        unknown = unknown_identifiers(sql, schema, dialect) if schema else []
        if unknown:
            return "grounding", "unknown " + ", ".join(unknown)
        if error_names_unknown_identifier(pred_error):
            return "grounding", (pred_error or "")[:300]
        if pred_timeout:
            return "execution", "the predicted SQL timed out"
        return "execution", (pred_error or "the predicted SQL failed")[:300]
    rows = list(pred_rows or [])
    for gold in golds:
        if gold is None:
            continue
        detail = convention_detail(rows, pred_columns, list(gold[0]), gold[1], order_matters, decimals)
        if detail:
            return "output_convention", detail
    first = next((gd for gd in golds if gd is not None), None)
    if first is None:
        return "reasoning", "wrong result"
    g_rows, g_cols = list(first[0]), first[1]
    pw = len(pred_columns)
    if pw != len(g_cols):
        return "reasoning", f"{pw} columns where gold has {len(g_cols)}, with different values"
    if len(rows) != len(g_rows):
        return "reasoning", f"{len(rows)} rows where gold has {len(g_rows)}"
    return "reasoning", "same shape as gold, different values"
