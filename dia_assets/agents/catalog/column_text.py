"""What a column holds, in words: the text the catalog embeds and indexes for an attribute,
and whether the column is an identifier.

A question names what a column holds ("how much does each employee earn?"), rarely its
name, and an identifier column holds nothing a plain question asks about. So the text is
built from what the column holds, not from how the schema spells it:

- its name, humanised, with the table's learned column prefix set aside (`c_acctbal` ->
  `acctbal`, see `platform/key_names.py`) and glued words split (`totalprice` -> `total
  price`, `receiptdate` -> `receipt date`, with the embedding model's own vocabulary and
  WordNet's words as the word list);
- the entity it describes (the table's name, singular);
- its description, when the interpretation has one;
- its semantic type in words (`date`: "a date, when");
- for descriptive columns, a few of its values that contain letters (`Action, Comedy`):
  numbers and codes say little to an embedding and are left out.

An identifier is a column whose name says "identifier" (`employee_id`, `custkey`, `code`) and
whose semantic type is not a descriptive one (a `postal_code` or `phone_number` holds a
postal code or a phone number), or a key column (primary or foreign) whose values carry no
letters (`reports_to`, `ship_via`). Keys named after what they hold (`product_line`) stay
descriptive.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from dia_assets.agents.catalog.lexicon import abbreviations, lexicon
from dia_assets.platform.key_names import SchemaNames, id_like

# semantic types whose values say what they are, whatever the column's name
DESCRIPTIVE_TYPES = frozenset({
    "boolean", "currency", "percentage", "date", "timestamp", "time", "email", "phone", "url",
    "postal_code", "country", "latitude", "longitude", "free_text", "json",
})
TYPE_WORDS = {
    "categorical": "a category", "boolean": "yes or no", "integer": "a number",
    "decimal": "an amount", "currency": "an amount of money", "percentage": "a percentage rate",
    "date": "a date, when", "timestamp": "a date and time, when", "time": "a time of day",
    "email": "an email address", "phone": "a telephone number", "url": "a web address",
    "postal_code": "a postal code", "country": "a country", "latitude": "a latitude",
    "longitude": "a longitude", "free_text": "text", "json": "structured data",
}
SAMPLE_VALUES = 3
SAMPLE_WORDS = 4
_LETTER = re.compile(r"[A-Za-z]")
_MIN_PIECE = 4
_MIN_ABBREVIATION = 3


def humanize(name: str) -> str:
    """`order_date` -> `order date`; `CustomerID` -> `customer id`."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return re.sub(r"[_\W]+", " ", spaced).strip().lower()


@lru_cache(maxsize=1)
def vocabulary() -> frozenset[str]:
    """Lower-case whole words of four letters or more that the WordLlama tokenizer knows (its
    word-initial pieces) or WordNet lists (the tokenizer holds about 8,000 words and lacks
    common ones, `receipt`, `retail`: `receiptdate` stayed glued); only WordNet's when the
    tokenizer file is not installed, empty when neither is (then glued names stay as they are)."""
    words = frozenset(w for (_, w) in lexicon().senses if w.isascii() and w.isalpha() and w.islower()
                      and len(w) >= _MIN_PIECE)
    try:
        from tokenizers import Tokenizer

        from dia_assets.platform.embeddings import wordllama_files

        vocab = Tokenizer.from_file(str(wordllama_files()[1])).get_vocab()
    except Exception:  # no tokenizer: WordNet's words only, the text is still built
        return words
    return words | frozenset(p[1:] for p in vocab if p.startswith("\u2581") and p[1:].isascii()
                             and p[1:].isalpha() and p[1:].islower() and len(p) > _MIN_PIECE)


@lru_cache(maxsize=4096)
def split_glued(word: str, vocab: frozenset[str] | None = None, min_piece: int = _MIN_PIECE) -> tuple[str, ...]:
    """`totalprice` -> (total, price): the fewest known words that
    spell `word` exactly (four letters or more each: shorter pieces split
    ordinary words, `dis count`; `min_piece` lower when `vocab` holds known abbreviations);
    the word itself when it is known or cannot be spelled that way."""
    vocab = vocabulary() if vocab is None else vocab
    if word in vocab or len(word) < 2 * min_piece or not vocab:
        return (word,)
    best: list[tuple[str, ...] | None] = [None] * (len(word) + 1)
    best[0] = ()
    for end in range(min_piece, len(word) + 1):
        for start in range(0, end - min_piece + 1):
            prev = best[start]
            if prev is not None and word[start:end] in vocab and (
                    best[end] is None or len(prev) + 1 < len(best[end])):  # type: ignore[arg-type]
                best[end] = (*prev, word[start:end])
    return best[-1] or (word,)


def name_words(names: SchemaNames, table: str, column: str) -> list[str]:
    """The column's name as words: table prefix set aside, glued words split (abbreviations of
    three letters or more count as pieces: `acctbal` -> acct bal), abbreviations written out
    (`account balance`, see `lexicon.abbreviations`)."""
    words = names.stripped(table, column.lower()) or (column.lower(),)
    short = abbreviations()
    vocab = vocabulary() | frozenset(k for k in short if len(k) >= _MIN_ABBREVIATION)
    out: list[str] = []
    for w in humanize(" ".join(words)).split():
        for piece in split_glued(w, vocab, min_piece=_MIN_ABBREVIATION):
            out.extend(short.get(piece, (piece,)))
    return out


def is_identifier(column: str, stripped: str, semantic_type: str | None, in_key: bool,
                  examples: Iterable[Any]) -> bool:
    """The column holds identifiers rather than something a person asks about (module doc)."""
    if semantic_type in DESCRIPTIVE_TYPES:
        return False
    if id_like(stripped) or id_like(column.lower()):
        return True
    values = [str(v) for v in examples if v is not None and str(v).strip()]
    return in_key and semantic_type in ("id", "integer", "unknown", None) and not any(
        _LETTER.search(v) for v in values)


def sample_values(values: Iterable[Any]) -> list[str]:
    """Up to three distinct values that contain letters, each cut to its first few words."""
    out: list[str] = []
    for v in values:
        text = " ".join(str(v).split()[:SAMPLE_WORDS]) if v is not None else ""
        if text and _LETTER.search(text) and text not in out:
            out.append(text)
        if len(out) == SAMPLE_VALUES:
            break
    return out


def column_text(words: list[str], entity: str, semantic_type: str | None, description: str | None,
                identifier: bool, values: list[str]) -> str:
    """The attribute's searchable text: what it holds (module doc)."""
    name = " ".join(words)
    parts = [f"identifier of the {entity}: {name}" if identifier else f"{name} of the {entity}"]
    if description:
        parts.append(description.rstrip("."))
    kind = TYPE_WORDS.get(semantic_type or "", "")
    if kind and not identifier:
        parts.append(kind)
    if values and not identifier:
        parts.append("such as " + ", ".join(values))
    return ". ".join(parts)
