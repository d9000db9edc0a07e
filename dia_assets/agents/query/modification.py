"""Modification tasks (DDL/DML): run in a transaction on a scratch copy, check the declared
post-condition, and apply to the real warehouse only when it holds and the caller allowed
writes. On PostgreSQL the scratch copy is a transaction that is rolled back.

What runs is exactly what the gate checked: the declared statements (regenerated from their
checked trees) and a post-condition that passes the same gate as a probe, as a read-only
SELECT against the tables the statements left behind. A post-condition never writes, and
it never runs on the live warehouse unless writes were allowed and it held on the copy."""

from __future__ import annotations

import contextlib
from typing import Any

from dia_assets.agents.query.memory import probe_confirms
from dia_assets.contracts.query_result import ModificationOutcome
from dia_assets.platform.sql.gate import Gate, schema_of
from dia_assets.platform.sql.safety import CheckedSQL, SQLRefused


def _run(gate: Gate, db: Any, statements: list[CheckedSQL], post_condition_sql: str,
         timeout_s: float) -> tuple[bool, str]:
    """Statements then post-condition, inside one transaction on `db`; returns (holds, detail)."""
    db.begin()
    try:
        db.execute_script([c.text for c in statements])
        schema = schema_of(db)
        reader = getattr(gate.db, "reader", "")  # PostgreSQL: read as the SELECT-only role
        with db.reading_as(reader) if reader else contextlib.nullcontext():
            _, out = gate.read(post_condition_sql, max_rows=1, timeout_s=timeout_s, db=db, schema=schema)
        rows = out.rows
    except SQLRefused as err:
        _rollback(db)
        return False, f"post-condition refused: {err}"[:500]
    except Exception as err:
        _rollback(db)
        return False, gate.error_text(err, sql="\n".join(c.text for c in statements))
    holds = probe_confirms(rows)
    first = repr(rows[0][0]) if rows and rows[0] else "no rows"
    return holds, f"post-condition {'holds' if holds else 'fails'} (first value {first})"


def _rollback(db: Any) -> None:
    with contextlib.suppress(Exception):  # no open transaction (rolled back after an error)
        db.rollback()


def run_modification(
    gate: Gate, statements: list[CheckedSQL], post_condition_sql: str, allow_writes: bool,
    timeout_s: float = 30.0,
) -> ModificationOutcome:
    """`statements` were checked by `gate` as writes; only they are ever applied."""
    db = gate.db
    outcome = ModificationOutcome(statements=[c.text for c in statements], post_condition_sql=post_condition_sql)
    scratch: Any = db.scratch()
    try:
        holds, detail = _run(gate, scratch, statements, post_condition_sql, timeout_s)
        _rollback(scratch)  # the scratch copy is thrown away either way
    finally:
        scratch.close()
    outcome.scratch_passed = holds
    if not holds:
        outcome.detail = f"scratch copy: {detail}; not applied"
        return outcome
    if not allow_writes:
        outcome.detail = f"scratch copy: {detail}; not applied: writes are not allowed (use --allow-writes)"
        return outcome
    try:
        live: Any = db.writable()  # type: ignore[attr-defined]
    except Exception as err:  # e.g. another process holds the DuckDB file
        db.reopen()  # type: ignore[attr-defined]
        outcome.detail = f"scratch copy: {detail}; not applied: the warehouse cannot be opened for writing ({err})"
        return outcome
    try:
        holds, live_detail = _run(gate, live, statements, post_condition_sql, timeout_s)
        if holds:
            live.commit()
            outcome.applied = True
            outcome.detail = f"scratch copy: {detail}; applied: {live_detail}"
        else:
            _rollback(live)
            outcome.detail = f"scratch copy: {detail}; live run {live_detail}; rolled back"
    finally:
        live.close()
        db.reopen()  # type: ignore[attr-defined]
    return outcome
