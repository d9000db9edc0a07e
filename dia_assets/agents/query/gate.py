"""The one door for SQL the model influences (DESIGN §8).

Probes, submissions, post-conditions, verification probes and memory probes all run
through a `Gate`: the static allow-list check (`safety.check_sql`), then the privacy rule
for anything whose result goes back to the model, then execution of the *regenerated*
statement on the warehouse's least-privileged connection (`dialects.py`). Nothing that
executes model-influenced SQL should call `Database.query` directly.

Privacy (`DIA_PRIVACY`):

- `samples` (default): results and sampled values may reach the model.
- `aggregates`: no row-level value: a result shown to the model has only aggregate
  statistics (COUNT, SUM, AVG, STDDEV, ...) in its projection; MIN, MAX, string/list
  aggregates and bare columns are refused, as are text and date values in the result.
- `schema-only`: no data value at all: only counts (COUNT, COUNT DISTINCT, COUNT_IF and
  expressions over them, such as `COUNT(*) > 0`). Prompts carry names, types and row counts.

In both restricted modes an engine error that reaches the model (or an MCP host) is
redacted first (`redaction.py`): it keeps the error class, the failure and the column
names, never the value that failed. `aggregates` therefore shows numbers computed by an
aggregate over the data (COUNT, SUM, AVG, STDDEV, ...), never a raw value of any type: no
text, no date, no single number read from a row.

Counts and aggregates computed under a filter the model chose can still narrow down a
value by repeated questions; the modes stop raw values from being shown, they do not make
the data anonymous.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from sqlglot import exp

from dia_assets.agents.query.dialects import Database, QueryOutput, QueryTimeout
from dia_assets.agents.query.redaction import (
    error_kind,
    is_redacted,
    redact_error,
    redact_message,
    redacted,
    schema_words,
    statement_words,
)
from dia_assets.agents.query.safety import CheckedSQL, SQLRefused, check_sql, clean_sql, guarded
from dia_assets.platform.settings import get_settings

PRIVACY_MODES = ("schema-only", "aggregates", "samples")
COUNTS: tuple[type[exp.Expression], ...] = (exp.Count, exp.CountIf, exp.ApproxDistinct)
STATISTICS: tuple[type[exp.Expression], ...] = (
    *COUNTS, exp.Sum, exp.Avg, exp.Stddev, exp.StddevPop, exp.StddevSamp, exp.Variance,
    exp.VariancePop, exp.Corr, exp.CovarPop, exp.CovarSamp,
)


def privacy_mode(value: str | None = None) -> str:
    """The privacy mode: the argument, else DIA_PRIVACY, else `samples`."""
    text = (value or get_settings().privacy).strip().lower().replace("_", "-")
    if text == "schema":
        text = "schema-only"
    if text not in PRIVACY_MODES:
        raise ValueError(f"DIA_PRIVACY must be one of {', '.join(PRIVACY_MODES)} (got {text!r})")
    return text


def shows_values(mode: str) -> bool:
    """Whether data values (samples, rows) may be sent to a model in this mode."""
    return mode == "samples"


def redact(text: str, mode: str, words: set[str] | frozenset[str] = frozenset()) -> str:
    """An engine message as the model may see it in `mode` (redaction.py); `words` are names
    and statement tokens that may stay."""
    return text if shows_values(mode) else redact_message(text, words)


def _outer_selects(tree: exp.Expression) -> list[exp.Select]:
    if isinstance(tree, exp.SetOperation):
        return _outer_selects(tree.left) + _outer_selects(tree.right)
    if isinstance(tree, exp.Subquery):
        return _outer_selects(tree.this)
    return [tree] if isinstance(tree, exp.Select) else []


def _value_free(node: exp.Expression, allowed: tuple[type[exp.Expression], ...], mode: str) -> None:
    if isinstance(node, (exp.Window, exp.Filter)):
        _value_free(node.this, allowed, mode)  # partitions and FILTER only shape the aggregate
        return
    if isinstance(node, allowed):
        return  # the columns inside are aggregated
    if isinstance(node, exp.AggFunc):
        raise SQLRefused(
            f"privacy mode {mode}: {node.sql()[:60]} returns values from the data; "
            f"only {'counts' if mode == 'schema-only' else 'aggregate statistics (COUNT, SUM, AVG, ...)'} may be shown",
            "privacy",
        )
    if isinstance(node, (exp.Column, exp.Star, exp.TableColumn, exp.Columns)):  # s, (s).x, COLUMNS(...)
        raise SQLRefused(
            f"privacy mode {mode}: column {node.sql()[:60]} would show row-level values; "
            f"return only {'counts' if mode == 'schema-only' else 'aggregates'}",
            "privacy",
        )
    if isinstance(node, (exp.Select, exp.SetOperation, exp.Subquery)):
        for select in _outer_selects(node):
            for projection in select.expressions:
                _value_free(projection, allowed, mode)
        return
    for child in node.iter_expressions():
        _value_free(child, allowed, mode)


@guarded
def check_privacy(tree: exp.Expression, mode: str) -> None:
    """Refuse a statement whose result, shown to the model, would carry data values."""
    if shows_values(mode):
        return
    allowed = COUNTS if mode == "schema-only" else STATISTICS
    selects = _outer_selects(tree)
    if not selects:
        raise SQLRefused(f"privacy mode {mode}: only SELECT results can be checked", "privacy")
    for select in selects:
        for projection in select.expressions:
            _value_free(projection, allowed, mode)


def check_result_privacy(output: QueryOutput, mode: str) -> None:
    """The second look: whatever the SQL, no text, date or binary value is shown."""
    if shows_values(mode):
        return
    for row in output.rows:
        for value in row:
            if value is None or isinstance(value, (bool, int, float, Decimal)):
                continue
            kind = "text" if isinstance(value, str) else "date" if isinstance(value, (dt.date, dt.time)) else type(value).__name__
            raise SQLRefused(f"privacy mode {mode}: the result carries a {kind} value; "
                             "return only numbers (counts or aggregates)", "privacy")


@dataclass
class Gate:
    """Check, privacy, then execution on the least-privileged connection."""

    db: Database
    schema: dict[str, dict[str, str]]
    privacy: str = "samples"
    # typed functions the allow-list denies that this gate admits (scoring: `sqlite_version()`)
    also_allowed: frozenset[type[exp.Expression]] = frozenset()

    @property
    def dialect(self) -> str:
        return self.db.dialect

    def check(self, sql: str, *, write: bool = False,
              schema: dict[str, dict[str, str]] | None = None) -> CheckedSQL:
        """The static check alone (raises SQLRefused)."""
        return check_sql(clean_sql(sql), self.db.dialect, self.schema if schema is None else schema,
                         allow_write=write, also_allowed=self.also_allowed)

    def read(
        self, sql: str | CheckedSQL, *, max_rows: int, timeout_s: float, shown: bool = True,
        db: Any = None, schema: dict[str, dict[str, str]] | None = None,
    ) -> tuple[CheckedSQL, QueryOutput]:
        """Run a read-only statement; `shown` results must respect the privacy mode."""
        checked = sql if isinstance(sql, CheckedSQL) else self.check(sql, schema=schema)
        if checked.is_write:
            raise SQLRefused("only a read-only SELECT may run here", "write_refused")
        if shown:
            check_privacy(checked.qualified if checked.qualified is not None else checked.tree, self.privacy)
        try:
            output = (db or self.db).query(checked.text, max_rows, timeout_s)
        except (QueryTimeout, MemoryError):
            raise  # our own messages: limits, never data
        except Exception as err:
            if shows_values(self.privacy):
                raise
            # every caller formats the error for the model: hand them one without values
            raise redacted(err, self.words(checked.text, schema)) from None
        if shown:
            check_result_privacy(output, self.privacy)
        return checked, output

    def rows(self, sql: str, max_rows: int = 5, timeout_s: float = 10.0) -> Sequence[Sequence[Any]]:
        """A memory probe: the same gate, raising on refusal (a refusal refutes the lesson)."""
        return self.read(sql, max_rows=max_rows, timeout_s=timeout_s)[1].rows

    probe = rows

    def as_database(self) -> GatedDatabase:
        """The warehouse as verification sees it: every probe through this gate."""
        return GatedDatabase(self)

    def words(self, sql: str | None = None, schema: dict[str, dict[str, str]] | None = None) -> set[str]:
        """What an error message may still name: the schema's names, the statement's tokens."""
        return schema_words(self.schema if schema is None else schema) | statement_words(sql, self.db.dialect)

    def error_text(self, err: BaseException, limit: int = 500, sql: str | None = None) -> str:
        """An engine error for the model, without data values in privacy modes."""
        if is_redacted(err) or shows_values(self.privacy):
            text = str(err)
        else:
            text = redact_error(err, self.words(sql))
        return f"{error_kind(err)}: {text}"[:limit]


class GatedDatabase:
    """`Database.query` for checks built from model SQL (verification probes): gated, and
    results not shown to the model as rows."""

    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.dialect = gate.db.dialect
        self.location = gate.db.location
        self.show_values = shows_values(gate.privacy)

    def query(self, sql: str, max_rows: int = 200, timeout_s: float = 10.0) -> QueryOutput:
        return self.gate.read(sql, max_rows=max_rows, timeout_s=timeout_s, shown=False)[1]


def schema_of(db: Database) -> dict[str, dict[str, str]]:
    """{table: {column: type}} of a connection's refined tables (lower case), for the gate."""
    return {t.name.lower(): {c.name.lower(): c.type for c in t.columns} for t in db.tables()}
