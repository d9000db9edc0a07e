"""What the names of key columns say, learned from the schema itself.

Schemas name keys in many conventions; this module reads them with no list of entity names:

- Key suffixes: a last word that says "identifier" (`id`, `key`, `sk`, `code`, `no`, ...), also
  glued to the word before it (`custkey`, `dvcid`).
- Table prefixes: when most columns of a table start with one short word (`l_`, `o_`, `ps_`, or
  the table's own name), that word is the table's prefix and is set aside when names are
  compared (`o_custkey` and `c_custkey` are both `custkey`).
- Table affixes: a short word that starts (or ends) the names of several tables (`dim_`, `f_`)
  is not part of any entity's name.
- Abbreviations: a word abbreviates another when it keeps its first letter and the rest in
  order (`cust`, `addr`, `dt`); several words abbreviate a run of words (`cdemo` for
  `customer_demographics`).
- Roles: words in front of a name that otherwise names the parent (`ship_to_address_id`,
  `bill_customer_sk`, `sales_rep_employee_number`).

`NameEvidence.score` ranks the evidence that a column refers to a key, in [0, 1]:

    1.0  same      the same name (prefixes set aside), or the column names the parent table
                   with the key's suffix (`customer_id` -> customers.id / customers.customer_id)
    0.85 abbrev    the same with abbreviated words (`cust_id`, `ss_cdemo_sk` -> cd_demo_sk)
    0.8  role      role words in front of one of the above (`ship_date_sk`, `bill_to_address_id`)
    0.75 hierarchy a self-reference named by a hierarchy word (`manager_id`, `reports_to`)
    0.6  head      names only the head noun of a compound parent (`address_id` -> customer_address)
    0.4  stem      shares a word stem of four letters or more
    0    none

A different suffix (`customer_id` against a `customer_sk` key) takes 0.2 off: surrogate and
business keys of one table are told apart by it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import cache

from dia_assets.contracts.interpretation import Source
from dia_assets.platform.naming import singular

GENERIC = frozenset({"id", "key", "sk", "code", "no", "nr", "num", "number", "uuid", "guid", "ref", "pk", "sku",
                     "ident", "identifier"})
GLUED = ("key", "sk", "id", "code", "no", "num", "nr")
# English words that end like a glued key suffix but are not `<stem><suffix>`
NOT_GLUED = frozenset({
    "valid", "invalid", "paid", "unpaid", "prepaid", "void", "avoid", "fluid", "liquid", "solid", "rapid", "humid",
    "hybrid", "acid", "squid", "vivid", "timid", "lucid", "rigid", "stupid", "pyramid", "android", "druid",
    "candid", "splendid", "orchid", "braid", "maid", "raid", "said", "laid", "amid", "grid", "skid", "bid", "kid",
    "lid", "rid", "mid", "monkey", "turkey", "whiskey", "hockey", "jockey", "donkey", "hotkey", "passkey",
    "casino", "piano", "volcano", "domino", "albino", "merino", "tornado", "desk", "risk", "task", "mask", "disk",
    "kiosk", "tusk", "dusk", "husk", "musk", "brisk", "whisk", "code", "decode", "encode", "barcode", "zipcode",
    "postcode", "unicode", "opcode", "geocode", "annum", "minimum", "maximum", "premium", "medium", "sum", "album",
    "forum", "drum", "serum", "quorum", "optimum", "stadium", "museum", "datum", "spectrum", "momentum", "no",
    "mono", "stereo", "nr",
})
HIERARCHY = frozenset({"parent", "manager", "mgr", "supervisor", "boss", "mentor", "lead", "reports", "superior",
                       "head", "owner", "predecessor", "successor", "replaced", "merged"})
MIN_AFFIX_TABLES = 3


@dataclass(frozen=True)
class NameEvidence:
    level: str  # same | abbrev | role | hierarchy | head | stem | none
    score: float
    reason: str

    @property
    def strong(self) -> bool:
        """Exact evidence: the Schema Creator blocks acceptance on such keys when the data disagrees."""
        return self.level == "same" and self.score >= 1.0


NONE = NameEvidence("none", 0.0, "")


def tokens(name: str) -> tuple[str, ...]:
    return tuple(t for t in name.lower().split("_") if t)


@cache
def key_suffix(words: tuple[str, ...]) -> tuple[tuple[str, ...], str | None]:
    """(stem, suffix): `customer_id` -> ((customer,), id); `custkey` -> ((cust,), key)."""
    if not words:
        return (), None
    last = words[-1]
    if last in GENERIC:
        return words[:-1], last
    if last not in NOT_GLUED:
        for g in GLUED:
            if last.endswith(g) and len(last) - len(g) >= 2:
                return (*words[:-1], last[: -len(g)]), g
    return words, None


def id_like(name: str) -> bool:
    """A name that says "identifier": it ends in a key suffix, glued or not."""
    return key_suffix(tokens(name))[1] is not None


@cache
def abbreviates(short: str, word: str) -> bool:
    """`cust` -> customer, `dt` -> date, `addr` -> address: first letter kept, the rest in order."""
    if short == word:
        return True
    if len(short) < 2 or len(short) >= len(word) or short[0] != word[0]:
        return False
    it = iter(word[1:])
    return all(ch in it for ch in short[1:])


@cache
def abbreviates_run(short: str, words: tuple[str, ...]) -> bool:
    """`cdemo` -> (customer, demographics), `cd` -> (customer, demographics): consecutive pieces of
    `short` abbreviate every word in turn (a one-letter piece is an initial)."""
    if not words:
        return not short
    if not short:
        return False
    word = words[0]
    for cut in range(1, len(short) + 1):
        piece = short[:cut]
        if piece[0] != word[0]:
            return False
        if (piece == word[0] or piece == word or abbreviates(piece, word)) and abbreviates_run(short[cut:], words[1:]):
            return True
    return False


def _same_words(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    return len(a) == len(b) and all(x == y or singular(x) == singular(y) for x, y in zip(a, b, strict=True))


def _abbreviated_words(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Word by word, `a` abbreviates `b` (`cust_addr` -> customer_address) or the other way
    round (two short forms of one word: `pag`, `pg`), or `a` is one word that abbreviates all of
    `b` (`cdemo`)."""
    if len(a) == len(b) and all(x == y or singular(x) == singular(y) or abbreviates(x, y) or (
            len(x) <= 4 and len(y) <= 4 and abbreviates(y, x)) for x, y in zip(a, b, strict=True)):
        return True
    return len(a) == 1 and len(b) > 1 and abbreviates_run(a[0], b)


class SchemaNames:
    """Prefixes and affixes learned from one schema's own names."""

    def __init__(self, sources: list[Source]) -> None:
        self.affixes = _table_affixes([s.name for s in sources])
        self.prefixes = {s.name: _column_prefix(s) for s in sources}
        self._words = {s.name: self._entity_words(s.name) for s in sources}

    def _entity_words(self, table: str) -> tuple[str, ...]:
        words = tokens(table)
        trimmed = tuple(w for i, w in enumerate(words) if not (
            (i == 0 or i == len(words) - 1) and w in self.affixes and len(words) > 1))
        return tuple(singular(w) for w in (trimmed or words))

    def entity(self, table: str) -> tuple[str, ...]:
        """The words that name what a table holds (`dim_customers` -> customer)."""
        return self._words.get(table) or self._entity_words(table)

    def variants(self, table: str, column: str) -> list[tuple[str, ...]]:
        """The column's words, and without the table's prefix when it has one."""
        words = tokens(column)
        prefix = self.prefixes.get(table)
        if prefix and len(words) > 1 and words[0] == prefix:
            rest = words[1:]
            if key_suffix(rest)[0]:  # never strip a name down to a bare suffix
                return [rest, words]
        return [words]

    def stripped(self, table: str, column: str) -> tuple[str, ...]:
        return self.variants(table, column)[0]

    def evidence(self, child: str, column: str, parent: str, key: str) -> NameEvidence:
        """How strongly the name of `child.column` says it refers to `parent.key`."""
        best = NONE
        for t in self.variants(child, column):
            for k in self.variants(parent, key):
                found = self._compare(t, k, child, parent)
                if found.score > best.score:
                    best = found
        return best

    def _compare(self, t: tuple[str, ...], k: tuple[str, ...], child: str, parent: str) -> NameEvidence:
        column, key = "_".join(t), "_".join(k)
        stem_t, suf_t = key_suffix(t)
        stem_k, suf_k = key_suffix(k)
        entity = self.entity(parent)
        self_ref = child == parent
        # the same key name
        if stem_k and _same_words(t, k) and not self_ref:
            return NameEvidence("same", 1.0, f"same name {key!r}")
        if stem_k and suf_t and suf_t == suf_k and len(stem_t) == len(stem_k) and not self_ref and (
                _abbreviated_words(stem_t, stem_k)):
            return NameEvidence("abbrev", 0.85, f"{column!r} abbreviates {key!r}")
        suffix_ok = suf_t is not None and (suf_t == suf_k or not stem_k or suf_k is None)
        penalty = 0.0 if suffix_ok else 0.2
        names_key = not stem_k or _same_words(stem_k, entity) or _abbreviated_words(stem_k, entity) or (
            abbreviates(stem_k[-1], entity[-1]))
        if suf_t is not None and stem_t and names_key:
            # the column names the parent table, whose key is its own identifier, with a key suffix
            if _same_words(stem_t, entity) and not self_ref:
                return NameEvidence("same", 1.0 - penalty, f"{column!r} names table {parent!r}")
            n = len(entity)
            if len(stem_t) > n and _same_words(stem_t[-n:], entity):
                return NameEvidence("role", 0.8 - penalty, f"{column!r} is a role-named reference to {parent!r}")
            for cut in range(len(stem_t)):
                if _abbreviated_words(stem_t[cut:], entity) and not (self_ref and cut == 0):
                    level, score = ("abbrev", 0.85) if cut == 0 else ("role", 0.75)
                    return NameEvidence(level, score - penalty, f"{column!r} abbreviates {parent!r}")
        # role words in front of the key's own name
        if stem_k and len(t) > len(k) and (_same_words(t[-len(k):], k) or (
                suf_t == suf_k and _abbreviated_words(t[-len(k):-1], stem_k))):
            return NameEvidence("role", 0.8, f"{column!r} is a role-named {key!r}")
        if self_ref and (suf_t is not None or t[-1] in ("to", "by")) and any(w in HIERARCHY for w in t):
            return NameEvidence("hierarchy", 0.75, f"self-reference with hierarchy name {column!r}")
        if suf_t is not None and stem_t and len(entity) > 1 and not self_ref and (
                _same_words(stem_t[-1:], entity[-1:]) or abbreviates(stem_t[-1], entity[-1])):
            return NameEvidence("head", 0.6 - penalty, f"{column!r} names {parent!r} by its head noun")
        stems = set(entity) | set(stem_k)
        for token in stem_t:
            if len(token) >= 4 and token not in GENERIC and any(
                    len(s) >= 4 and (s.startswith(token) or token.startswith(s)) for s in stems):
                return NameEvidence("stem", 0.4, f"{column!r} shares the stem {token!r} with {parent}.{key}")
        return NONE


def extension_of(table: str, base_entity: tuple[str, ...]) -> bool:
    """`table` is named as an aspect of the entity `base_entity` (`customer_details`,
    `player_ext`, `courextra`): its name starts with that entity's name, or a short form of it,
    and goes on."""
    joined = "".join(tokens(table))
    head = "".join(base_entity)
    if joined.startswith(head):
        return len(joined) > len(head) + 1
    # a short form of a one-word entity, then the aspect; the cut ends where the two names part
    return len(base_entity) == 1 and any(abbreviates(joined[:cut], head) and joined[cut] != head[cut]
                                         for cut in range(3, min(len(head), len(joined) - 2)))


def _table_affixes(names: list[str]) -> frozenset[str]:
    """Short words that start or end several table names (`dim_`, `fact_`, `_dim`, `d_`)."""
    if len(names) < MIN_AFFIX_TABLES:
        return frozenset()
    whole = {n.lower() for n in names}
    counts: Counter[str] = Counter()
    for name in names:
        words = tokens(name)
        if len(words) > 1:
            counts.update({words[0], words[-1]})
    return frozenset(w for w, n in counts.items()
                     if len(w) <= 4 and n >= MIN_AFFIX_TABLES and n >= 0.2 * len(names) and w not in whole)


def _column_prefix(source: Source) -> str | None:
    """A first word most columns share: `l_` of `l_orderkey, l_partkey, ...` (or the table's name)."""
    return column_prefix([tokens(c.name) for c in source.columns], tokens(source.name))


def column_prefix(names: list[tuple[str, ...]], table: tuple[str, ...]) -> str | None:
    """The first word most of a table's column names (as words) share: a short one (`l`, `ps`),
    or the table's own name (`customer_name, customer_city`); never a generic word (`id`)."""
    multi = [w for w in names if len(w) > 1]
    if len(names) < 2 or len(multi) < 2:
        return None
    word, n = Counter(w[0] for w in multi).most_common(1)[0]
    if n < 0.6 * len(names) or word in GENERIC:
        return None
    if len(word) <= 4 or any(word == w or singular(word) == singular(w) for w in table):
        return word
    return None
