"""What an MCP host may see of the workspace artifacts (interpretation, manifest, validation
report) in each privacy mode (DIA_PRIVACY, see agents/query/gate.py).

`samples` shows the artifacts as written. Outside it, the view is built by rules rather than
by a list of known leaks alone:

- fields that hold data values are dropped at any depth (VALUE_FIELDS: examples, top values,
  min/max, category maps, ...); in `schema-only` also the numeric statistics (STATISTIC_FIELDS:
  mean, ...), since that mode shows counts only;
- SQL (a `sql` or `*_sql` field, such as the report's test queries, which look rows up by
  their key) keeps its shape but not its literals: every string literal becomes '…' and
  every number other than 0, 1, a type's size or a LIMIT becomes `?`;
- every other text keeps its words but not what it quotes (agents/query/redaction.py): quoted
  segments that are not names of the warehouse are cut.
"""

from __future__ import annotations

from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel

from dia_assets.platform.sql.redaction import HIDDEN, redact_text

VALUE_FIELDS = frozenset({
    "min", "max", "quantiles", "top_values", "patterns", "examples", "unparseable_examples",
    "bad_row_examples", "orphan_examples", "true_values", "false_values", "category_map",
    "normalizations", "preview", "sample_values", "values", "null_tokens",
})
STATISTIC_FIELDS = frozenset({"mean", "median", "std", "stddev", "sum", "avg", "average"})


def _is_sql_key(key: str) -> bool:
    return key == "sql" or key.endswith("_sql")


def _kept_number(node: exp.Literal) -> bool:
    if node.this in ("0", "1"):
        return True
    return node.find_ancestor(exp.DataType, exp.Limit, exp.Offset, exp.Fetch) is not None


def sql_without_literals(sql: str, dialect: str | None, words: set[str] | frozenset[str] = frozenset()) -> str:
    """`sql` with its string literals as '…' and its numbers (but 0, 1, sizes, limits) as `?`."""
    try:
        trees = sqlglot.parse(sql, read=dialect)
    except Exception:  # not parseable: cut what it quotes, hide its numbers
        return redact_text(sql, words, numbers=True)
    out = []
    for tree in trees:
        if tree is None:
            continue
        def blank(node: exp.Expression) -> exp.Expression:
            if isinstance(node, exp.Literal):
                if node.is_string:
                    return exp.Literal.string(HIDDEN)
                if not _kept_number(node):
                    return exp.Placeholder()
            return node
        out.append(tree.transform(blank).sql(dialect=dialect, unsupported_level=ErrorLevel.IGNORE))
    return ";\n".join(out)


def artifact_view(value: Any, mode: str, dialect: str | None = None,
                  words: set[str] | frozenset[str] = frozenset()) -> Any:
    """A copy of an artifact (parsed JSON) that respects `mode`; `words` are the warehouse's
    names, which quoted text may keep."""
    if mode == "samples":
        return value
    dropped = VALUE_FIELDS | (STATISTIC_FIELDS if mode == "schema-only" else frozenset())

    def walk(item: Any, key: str = "") -> Any:
        if isinstance(item, dict):
            return {k: walk(v, k) for k, v in item.items() if k not in dropped}
        if isinstance(item, list):
            return [walk(v, key) for v in item]
        if isinstance(item, str):
            return sql_without_literals(item, dialect, words) if _is_sql_key(key) else redact_text(item, words)
        return item

    return walk(value)
