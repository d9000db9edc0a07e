"""Run SQL from a predictions file (another system's output) for scoring, through the gate.

A predictions file is untrusted input, so its SQL passes the same gate as the agent's
(`query.gate.Gate`, the static allow-list check of `query.safety`) and runs as the gate
regenerated it, on the read-only connection. Three things differ, so that a prediction scores
as BIRD's scorer (`evaluation.py`: Python's sqlite3 `execute` + `fetchall`, sets compared)
scores it:

- Text with no statement (empty, blanks, comments, a lone `;`) is not refused: sqlite3
  executes it to no rows, so it runs to an empty result here without touching the database
  (EX 1 exactly when the gold result is empty).
- On SQLite, SELECTs may read SQLite's own tables (`sqlite_master`/`sqlite_schema`, and
  `sqlite_sequence`, `sqlite_stat*` where the file has them) and call `sqlite_version()`:
  they disclose the schema (which the harness shows any model anyway) and the engine's
  version, nothing outside the file. The connection admits them too (`catalog_reads`).
- On SQLite, a double-quoted name that is no column of the database's tables (nor an alias
  or CTE column of the statement) is a string literal, SQLite's documented fallback
  (`WHERE type = "table"`), rewritten before the gate sees the statement. SQLite decides per
  scope; a name that is a column of some other table stays a column here (and is refused).
- No privacy mode: no model sees these results.

Everything else stays refused and scores 0 with the refusal recorded as the error: writes
(BIRD's scorer would run them on a read-write connection), PRAGMA, ATTACH, file and extension
functions, more than one statement (sqlite3 raises on that too).
"""

from __future__ import annotations

import threading

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from dia_assets.agents.evaluation.databases import Database, ResultSet
from dia_assets.agents.evaluation.models import Execution
from dia_assets.agents.evaluation.runner import execute
from dia_assets.platform.sql.gate import Gate, schema_of
from dia_assets.platform.sql.safety import SQLRefused

REFUSED = "refused by the SQL gate: "


def has_statement(sql: str, dialect: str) -> bool:
    """Whether the text holds any token but `;` (comments are not tokens)."""
    try:
        tokens = Dialect.get_or_raise(dialect).tokenize(sql)
    except Exception:  # noqa: BLE001 - untokenizable text is something: the gate refuses it
        return True
    return any(t.token_type != TokenType.SEMICOLON for t in tokens)


def sqlite_dqs_literals(sql: str, columns: set[str]) -> str:
    """SQLite's double-quoted string fallback: an unqualified double-quoted name that is no
    known column (nor alias) becomes a string literal. Unchanged when nothing is rewritten or
    the text does not parse (the gate then reports it)."""
    try:
        trees = [t for t in sqlglot.parse(sql, read="sqlite") if t is not None]
    except Exception:  # noqa: BLE001 - the gate refuses it with its own message
        return sql
    if len(trees) != 1:
        return sql
    tree = trees[0]
    names = set(columns)
    names |= {a.alias.casefold() for a in tree.find_all(exp.Alias)}
    names |= {c.name.casefold() for t in tree.find_all(exp.TableAlias) for c in t.columns}
    changed = False
    for col in list(tree.find_all(exp.Column)):
        ident = col.this
        if (isinstance(ident, exp.Identifier) and ident.quoted and not col.table
                and ident.name.casefold() not in names
                and '"' + ident.name.replace('"', '""') + '"' in sql):  # double quotes, not `x` or [x]
            col.replace(exp.Literal.string(ident.name))
            changed = True
    return tree.sql(dialect="sqlite") if changed else sql


def scoring_gate(db: Database) -> Gate:
    """The gate for one database, with the catalog reads `catalog_reads` admits."""
    inner = db._db
    schema = schema_of(inner)
    also: frozenset[type[exp.Expression]] = frozenset()
    if getattr(inner, "catalog_reads", False):
        schema.update({t.name.lower(): {c.name.lower(): c.type for c in t.columns}
                       for t in inner.catalog_tables()})
        also = frozenset({exp.CurrentVersion})
    return Gate(db=inner, schema=schema, also_allowed=also)


class PredictionSandbox:
    """`runner.Executor` for predictions files: one gate per open database."""

    def __init__(self) -> None:
        self._gates: dict[int, Gate] = {}
        self._lock = threading.Lock()

    def gate(self, db: Database) -> Gate:
        with self._lock:
            if id(db) not in self._gates:
                self._gates[id(db)] = scoring_gate(db)
            return self._gates[id(db)]

    def __call__(self, db: Database, sql: str, timeout_s: float) -> tuple[Execution | None, ResultSet | None]:
        if not has_statement(sql, db.dialect):
            return Execution(sql=sql, ok=True), ResultSet([], [])
        gate = self.gate(db)
        text = sql
        if db.dialect == "sqlite" and '"' in sql:
            text = sqlite_dqs_literals(sql, {c.casefold() for cols in gate.schema.values() for c in cols})
        try:
            checked = gate.check(text)
        except SQLRefused as err:
            return Execution(sql=sql, ok=False, error=f"{REFUSED}{err}"[:600]), None
        return execute(db, checked.text, timeout_s)
