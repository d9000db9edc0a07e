"""Engine error messages without data values, for the privacy modes `aggregates` and
`schema-only` (DIA_PRIVACY; see gate.py).

Engines quote the offending value in their errors: DuckDB `Could not convert string
'O'QUOKKA' to INT32` (the inner quote not even escaped), PostgreSQL `invalid input syntax
for type integer: "O'QUOKKA"`, `Key (id)=(5) already exists`, `Failing row contains (...)`;
some print values bare (`Overflow in multiplication of INT32 (7123457 * 10)`, `Date out of
range: 7123457-1-1`). Enumerating messages would miss the next one, so the rule is an
allow-list, like the gate's:

- lines: only the first line of the message stays, and PostgreSQL's hint when the driver
  hands it over as its own field; DETAIL, CONTEXT, LINE and caret lines (rows, keys, the
  statement) are dropped, and so is anything a value with line breaks could make look like
  an engine line (a value spelling `\nHINT: ...` stays inside the cut first line);
- quoted text: a quoted segment stays only when it is a name the model may know (a table or
  column of the schema, a word or literal of the model's own statement, or a function
  signature over such a name); any other segment is cut from its opening quote to the last
  matching quote on the line, so a value with quotes inside cannot end the cut early;
- numbers: a number stays only when the statement itself contains it.

The error class, the failure ("could not convert ... to INT32") and the column names stay,
so the model can still repair its SQL.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import sqlglot

HIDDEN = "…"
_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?![\w])")
_SIGNATURE = re.compile(r"^([A-Za-z_]\w*)\(([A-Z0-9_\[\], ]*)\)$")


def statement_words(sql: str | None, dialect: str | None = None) -> set[str]:
    """Every token of the model's own statement, lower case: words, names, literals, numbers."""
    if not sql:
        return set()
    try:
        tokens = sqlglot.Dialect.get_or_raise(dialect).tokenize(sql)
    except Exception:  # an untokenisable statement: fall back to plain words
        return {w.lower() for w in re.findall(r"[\w.]+", sql)}
    return {t.text.lower() for t in tokens if t.text}


def schema_words(schema: dict[str, dict[str, str]] | None) -> set[str]:
    """Table and column names of the gate's schema, lower case."""
    words: set[str] = set()
    for table, columns in (schema or {}).items():
        words.add(table.lower())
        words.update(c.lower() for c in columns)
    return words


def _known(segment: str, words: set[str]) -> bool:
    text = segment.strip().lower()
    if not text:
        return True
    if text in words or all(part in words for part in text.split(".")):
        return True
    signature = _SIGNATURE.match(segment.strip())
    return bool(signature) and signature.group(1).lower() in words


def _closing(line: str, quote: str, start: int) -> int:
    """Where a cut that opened at `start` ends: the last matching quote on the line that is
    not followed by a letter (so `can't` does not count), else the end of the line."""
    end = -1
    for i in range(start + 1, len(line)):
        if line[i] == quote and (i + 1 == len(line) or not line[i + 1].isalnum()):
            end = i
    return end


def _quoted(line: str, words: set[str]) -> str:
    out: list[str] = []
    i = 0
    while i < len(line):
        ch = line[i]
        opens = ch in "'\"" and (i == 0 or not line[i - 1].isalnum())
        if not opens:
            out.append(ch)
            i += 1
            continue
        first = line.find(ch, i + 1)
        if first != -1 and _known(line[i + 1:first], words):
            out.append(line[i:first + 1])
            i = first + 1
            continue
        end = _closing(line, ch, i)
        out.append(f"{ch}{HIDDEN}{ch}" if end != -1 else f"{ch}{HIDDEN}")
        i = end + 1 if end != -1 else len(line)
    return "".join(out)


def _numbers(line: str, words: set[str]) -> str:
    return _NUMBER.sub(lambda m: m.group(0) if m.group(0).lower() in words else HIDDEN, line)


def redact_text(text: str, words: Iterable[str] = (), numbers: bool = False) -> str:
    """Every line of `text` with its quoted segments cut (but known names), and with
    `numbers` its numbers too (but the statement's own)."""
    known = {w.lower() for w in words}
    lines = [_quoted(ln, known) for ln in str(text).split("\n")]
    return "\n".join(_numbers(ln, known) if numbers else ln for ln in lines)


def redact_message(text: str, words: Iterable[str] = ()) -> str:
    """The first line of `text` (an engine message) with data values replaced by `…`;
    `words` are what the model may see again (statement_words, schema_words)."""
    first = next((ln for ln in str(text).splitlines() if ln.strip()), "")
    return redact_text(first, words, numbers=True)


def redact_error(err: BaseException, words: Iterable[str] = ()) -> str:
    """An engine error's message without data values: PostgreSQL's primary message and hint
    from the driver's own fields (psycopg `diag`), any other engine's first line."""
    known = {w.lower() for w in words}
    diag = getattr(err, "diag", None)
    primary = getattr(diag, "message_primary", None)
    if not primary:
        return redact_message(str(err), known)
    hint = getattr(diag, "message_hint", None)
    return redact_message(primary, known) + (f"\nHINT:  {redact_message(hint, known)}" if hint else "")


class RedactedError(RuntimeError):
    """An engine error whose message was redacted; `kind` is the engine's error class."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def redacted(err: BaseException, words: Iterable[str]) -> BaseException:
    """A copy of `err` (of the same class where it can be built from a message, so callers'
    `except` clauses still match) with its message redacted and marked `redacted`."""
    message = redact_error(err, words)
    try:
        copy = type(err)(message)
        if str(copy) != message:
            raise TypeError("message not kept")
    except Exception:  # an exception class that takes other arguments
        copy = RedactedError(type(err).__name__, message)
    copy.redacted = True  # type: ignore[attr-defined]
    return copy


def is_redacted(err: BaseException) -> bool:
    return bool(getattr(err, "redacted", False))


def error_kind(err: BaseException) -> str:
    """The engine's error class, also through a RedactedError."""
    return err.kind if isinstance(err, RedactedError) else type(err).__name__
