"""Markdown tables with one escaping rule, for every view a reader sees (Dagster metadata, the
interpretation review, answers, lineage and validation reports).

Cells often hold data (query previews, a column's examples, a file's header text), so a cell must
not break the table or vanish: Dagster's UI renders Markdown without raw HTML, so a value such as
`<NA>` or `a<b` would otherwise be read as a tag and dropped. This module imports nothing but the
standard library, so the Dagster code location can use it without loading an agent.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence

_TICKS = re.compile(r"(`+)")


def _escape_html(text: str) -> str:
    """`<` as `&lt;`, except inside code spans, where Markdown shows text as written (an entity
    there would be shown as `&lt;` itself)."""
    parts = _TICKS.split(text)  # even indexes: text, odd indexes: runs of backticks
    out: list[str] = []
    i = 0
    while i < len(parts):
        if i % 2 == 0:
            out.append(parts[i].replace("<", "&lt;"))
            i += 1
            continue
        # a code span runs to the next backtick run of the same length (CommonMark)
        close = next((j for j in range(i + 2, len(parts), 2) if parts[j] == parts[i]), None)
        if close is None:  # a lone run of backticks is literal text
            out.append(parts[i])
            i += 1
        else:
            out.append("".join(parts[i:close + 1]))
            i = close + 1
    return "".join(out)


def cell(value: object) -> str:
    """A value safe inside a Markdown table cell: `None` is empty, pipes are escaped, line breaks
    become spaces (one row stays one line), and `<` is not read as HTML."""
    if value is None:
        return ""
    text = str(value).replace("|", "\\|").replace("\r\n", " ").replace("\r", " ").replace("\n", " ")
    return _escape_html(text)


def table(head: Sequence[object], rows: Iterable[Sequence[object]], right: Collection[str] = ()) -> str:
    """A Markdown table; every header and value goes through `cell`. `right` names the columns
    aligned right (numbers)."""
    lines = ["| " + " | ".join(cell(h) for h in head) + " |",
             "|" + "".join("---:|" if h in right else "---|" for h in head)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
