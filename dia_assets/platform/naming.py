"""Stable, predictable names for sources and columns (DESIGN §5)."""

from __future__ import annotations

import re
import unicodedata

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_NON_WORD = re.compile(r"[^0-9a-zA-Z]+")


def snake_case(text: str) -> str:
    """`Order Date` -> `order_date`, `unitPrice` -> `unit_price`, `Größe` -> `grosse`."""
    text = unicodedata.normalize("NFKD", str(text)).replace("ß", "ss")
    text = text.encode("ascii", "ignore").decode()
    text = _CAMEL.sub("_", text.strip())
    text = _NON_WORD.sub("_", text).strip("_").lower()
    if not text:
        return "column"
    return f"c_{text}" if text[0].isdigit() else text


def unique_names(names: list[str]) -> list[str]:
    """Snake-case a header and make every name distinct (`a, a` -> `a, a_2`)."""
    seen: dict[str, int] = {}
    out: list[str] = []
    for raw in names:
        base = snake_case(raw)
        name = base
        while name in seen:
            seen[base] += 1
            name = f"{base}_{seen[base]}"
        seen.setdefault(name, 1)
        out.append(name)
    return out


def singular(word: str) -> str:
    """Crude English singular, good enough to match `orders` with `order_id`."""
    for suffix, repl in (("ies", "y"), ("sses", "ss"), ("ses", "s"), ("s", "")):
        if word.endswith(suffix) and len(word) > len(suffix) + 1:
            return word[: -len(suffix)] + repl
    return word


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def sql_str(text: str) -> str:
    """A SQL string literal (single quotes doubled), for the DuckDB SQL the readers and loaders write."""
    return "'" + text.replace("'", "''") + "'"
