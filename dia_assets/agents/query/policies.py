"""Interaction policies of DIA App. D.5: resubmission control, forced clarification and
context carryover. Plain state machines the loop consults; no model calls here."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import sqlglot
from sqlglot import exp

from dia_assets.platform.sql.safety import MAX_SQL_CHARS, normalize_sql

CARRYOVER_NAME = "previous"


@dataclass
class ResubmissionControl:
    """A submission equal to one of the recent ones (after sqlglot normalization) is refused."""

    dialect: str
    window: int = 5
    recent: deque[str] = field(default_factory=deque)

    def is_repeat(self, sql: str) -> bool:
        return normalize_sql(sql, self.dialect) in self.recent

    def remember(self, sql: str) -> None:
        self.recent.append(normalize_sql(sql, self.dialect))
        while len(self.recent) > self.window:
            self.recent.popleft()


@dataclass
class ForcedClarification:
    """After `threshold` consecutive failures with the same signature the next action must be
    `ask`. The streak resets on an ask or on a failure with a different signature."""

    threshold: int = 3
    last_signature: str | None = None
    streak: int = 0
    must_ask: bool = False

    def failure(self, signature: str) -> bool:
        if signature == self.last_signature:
            self.streak += 1
        else:
            self.last_signature, self.streak = signature, 1
        self.must_ask = self.streak >= self.threshold
        return self.must_ask

    def asked(self) -> None:
        self.last_signature, self.streak, self.must_ask = None, 0, False


@dataclass
class PreviousAnswer:
    """The accepted SQL of the previous turn of a conversation (context carryover)."""

    question: str
    sql: str


def carryover_prompt(previous: PreviousAnswer) -> str:
    return (
        f"This is a follow-up. The previous question was: {previous.question!r}. Its accepted SQL "
        f"is available as a CTE named `{CARRYOVER_NAME}`; start from it (SELECT ... FROM "
        f"{CARRYOVER_NAME} ...) and apply only the requested change:\n"
        f"WITH {CARRYOVER_NAME} AS (\n{previous.sql.strip().rstrip(';')}\n)"
    )


def apply_carryover(sql: str, previous: PreviousAnswer | None, dialect: str) -> str:
    """Prepend `WITH previous AS (...)` when the SQL reads `previous` without defining it."""
    if previous is None or len(sql) > MAX_SQL_CHARS:
        return sql
    try:
        return _with_previous(sql, previous, dialect)
    except Exception:  # noqa: BLE001 - unparseable or too deep: the gate refuses it with a reason
        return sql


def _with_previous(sql: str, previous: PreviousAnswer, dialect: str) -> str:
    tree = sqlglot.parse_one(sql, read=dialect)
    defined = {cte.alias_or_name.lower() for cte in tree.find_all(exp.CTE)}
    reads = {t.name.lower() for t in tree.find_all(exp.Table)}
    if CARRYOVER_NAME not in reads or CARRYOVER_NAME in defined:
        return sql
    base = sqlglot.parse_one(previous.sql, read=dialect)
    cte = exp.CTE(this=base, alias=exp.TableAlias(this=exp.to_identifier(CARRYOVER_NAME)))
    with_ = tree.args.get("with_") or tree.args.get("with")
    if with_ is not None:
        with_.set("expressions", [cte, *with_.expressions])
    else:
        tree.set("with_", exp.With(expressions=[cte]))
    return tree.sql(dialect=dialect, pretty=True)
