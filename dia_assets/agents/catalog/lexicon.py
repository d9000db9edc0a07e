"""English words that mean the same or a near thing, from WordNet: the vocabulary bridge
between a question's words and a column's name words.

A 256-d word embedding puts "levy" far from "tax" (cosine 0.04), "clerk" far from "employee"
(0.09) and "performer" far from "actor" (0.20): a plain question rarely uses the schema's
word, and the vectors do not connect the two. WordNet (Princeton, 3.0) records these links:
synonyms share a synset (`tax`, `levy`'s hypernym; `surname`, `last name`), a hypernym is the
general word (`clerk` -> `employee`), a derivation links word families (`earn` -> `earnings`,
in the synset of `salary`, `pay`, `wage`).

`related(a, b)`: some base form of `a` (WordNet's morphology: `movies` -> movie, `born` ->
bear) has, among its first SENSES senses per part of speech, a synset that holds a base form
of `b` or points to one (hypernym, derivation, similar adjective, attribute, pertainym,
participle), or the same the other way round. Only a word's most frequent senses count, so
that rare senses (`film` as a thin coating) do not link everything to everything.

Column names abbreviate (`acctbal`, `qty`, `msrp`): `abbreviations()` reads a table of common
ones (`data/abbreviations.tsv`, general business usage), so that a name's words are compared as
the words they stand for.

The package ships a compact extract (`data/lexicon.tsv.gz`, written by
`tools/build_lexicon.py` from Debian's `wordnet-base`); WordNet's license allows this with its
notice, kept in `data/WORDNET_LICENSE`. Without the file, nothing is related.
"""

from __future__ import annotations

import gzip
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources

SENSES = 2
SYNONYM, LINK = 1.0, 0.8
POS = ("n", "v", "a", "r")
# WordNet's detachment rules (morphy), per part of speech: (suffix, replacement)
RULES = {
    "n": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
          ("men", "man"), ("ies", "y")),
    "v": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
          ("ing", "")),
    "a": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")),
    "r": (),
}


@dataclass
class Lexicon:
    """Synsets (their lemmas and the synsets they point to), each lemma's synsets by frequency,
    and the morphological exceptions."""

    lemmas: list[tuple[str, ...]] = field(default_factory=list)
    links: list[tuple[int, ...]] = field(default_factory=list)
    senses: dict[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)
    exceptions: dict[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)

    def base_forms(self, word: str, pos: str) -> tuple[str, ...]:
        """The word's lemmas in one part of speech (morphy): exceptions, the word itself, then
        the detachment rules; only forms WordNet knows."""
        word = word.lower()
        forms = [*self.exceptions.get((pos, word), ()), word]
        forms += [word[: -len(s)] + r for s, r in RULES[pos] if word.endswith(s) and len(word) > len(s)]
        return tuple(f for f in dict.fromkeys(forms) if (pos, f) in self.senses)

    def synonyms(self, word: str) -> frozenset[str]:
        """Lemmas of the word's first SENSES synsets per part of speech (multi-word lemmas
        joined by `_`)."""
        return _neighbours(self, word, False)

    def neighbours(self, word: str) -> frozenset[str]:
        """The synonyms and the lemmas of the synsets they point to."""
        return _neighbours(self, word, True)

    def relation(self, a: str, b: str) -> float:
        """How closely `a` and `b` are related (module doc): SYNONYM when one is among the
        other's synonyms, LINK when one is among the other's neighbours, else 0."""
        fa, fb = self.forms(a), self.forms(b)
        if not fa or not fb:
            return 0.0
        if fb & self.synonyms(a) or fa & self.synonyms(b):
            return SYNONYM
        return LINK if fb & self.neighbours(a) or fa & self.neighbours(b) else 0.0

    def related(self, a: str, b: str) -> bool:
        return self.relation(a, b) > 0

    def forms(self, word: str) -> frozenset[str]:
        """Every base form of the word, over all parts of speech (memoized: schema linking asks
        `relation` for every question word against every name word of every candidate column,
        thousands of calls per question over a few hundred distinct words)."""
        return _forms(self, word)


@lru_cache(maxsize=65536)
def _forms(lex: Lexicon, word: str) -> frozenset[str]:
    return frozenset(f for pos in POS for f in lex.base_forms(word, pos))


@lru_cache(maxsize=65536)
def _neighbours(lex: Lexicon, word: str, linked: bool) -> frozenset[str]:
    out: set[str] = set()
    for pos in POS:
        for base in lex.base_forms(word, pos):
            for s in lex.senses[(pos, base)][:SENSES]:
                out.update(lex.lemmas[s])
                for t in lex.links[s] if linked else ():
                    out.update(lex.lemmas[t])
    return frozenset(out)


Lexicon.__hash__ = object.__hash__  # type: ignore[method-assign]  # one shared instance, cached by identity


@cache
def abbreviations() -> dict[str, tuple[str, ...]]:
    """Column-name abbreviations and the words they stand for (`data/abbreviations.tsv`)."""
    try:
        text = resources.files("dia_assets.agents.catalog").joinpath("data/abbreviations.tsv").read_text("utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return {}
    rows = (line.split("\t") for line in text.splitlines() if line.strip() and not line.startswith("#"))
    return {short: tuple(long.split()) for short, long in rows}


@cache
def lexicon() -> Lexicon:
    """The shipped extract, loaded once (about a second); empty when the file is missing."""
    lex = Lexicon()
    try:
        raw = resources.files("dia_assets.agents.catalog").joinpath("data/lexicon.tsv.gz").read_bytes()
    except (FileNotFoundError, ModuleNotFoundError):
        return lex
    for line in gzip.decompress(raw).decode("utf-8").splitlines():
        kind, a, b, c = (line.split("\t") + ["", "", ""])[:4]
        if kind == "S":
            lex.lemmas.append(tuple(b.split()))
            lex.links.append(tuple(int(x) for x in c.split()))
        elif kind == "W":
            lex.senses[(a, b)] = tuple(int(x) for x in c.split())
        elif kind == "X":
            lex.exceptions[(a, b)] = (*lex.exceptions.get((a, b), ()), c)
    return lex
