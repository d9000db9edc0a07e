"""Schema linking in a user's words: which tables a question needs, ranked, closed over the key
graph and fitted to a prompt budget.

Users name what a table holds ("clients", "vendors", "movies"), not the table (`sb_customer`,
`tpch_supplier`, `flm`). Three signals, each with its own score, summed per table:

- names: question words against the words of the table's name with its namespace prefix set
  aside (`tpch_`, `sb_`, `dim_`: first words shared by several tables; a glued `sbcustomer` ends
  with the word), plural or singular, abbreviated (`cust`, `addr`: `key_names.abbreviates`); then column names with the
  table's column prefix set aside (`c_mktsegment` -> mktsegment), and sampled values;
- meaning: WordLlama cosine similarity (offline) between the question and a short text of the
  table (name words, column words, a few values), which carries synonyms the names miss;
- keys: a table inherits part of the score of the tables its foreign keys join (a question on
  "orders per customer" needs both ends), and a link table (a table whose foreign keys join two
  linked tables that do not join each other: film actors, order lines, part suppliers) is added
  right after the tables it connects.

The ranked tables then fill the prompt: the first `full` with types and sample values, the rest
with column names only, until the token budget is spent. A missed table costs a wrong answer,
a compact line costs ~40 tokens: recall comes first.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from dia_assets.platform.key_names import (
    abbreviates,
    abbreviates_run,
    column_prefix,
    key_suffix,
)


class LinkedSchema(Protocol):
    """What the linker reads of the schema index (query/schema.py SchemaIndex, which builds it)."""

    tables: Mapping[str, Any]  # name -> TableInfo: .columns (.name, .values, .samples), .foreign_keys

    def render(self, names: list[str]) -> str: ...

    def render_compact(self, names: list[str]) -> str: ...

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[a-z][a-z0-9]*|[0-9]+")
STOP = frozenset({
    "the", "a", "an", "of", "in", "on", "for", "to", "and", "or", "by", "per", "each", "what", "which", "who", "whom",
    "how", "many", "much", "is", "are", "was", "were", "do", "does", "did", "we", "us", "our", "have", "has", "had",
    "with", "from", "at", "as", "that", "this", "these", "those", "all", "any", "its", "it", "their", "them", "they",
    "be", "been", "there", "most", "least", "than", "more", "less", "total", "average", "number", "count", "list",
    "show", "give", "find", "top", "first", "last", "best", "highest", "lowest", "largest", "smallest", "between",
    "into", "over", "under", "after", "before", "since", "not", "no", "never", "ever", "only", "also", "other",
    "some", "same", "different", "distinct", "when", "where", "while", "whose", "so", "far", "can", "could", "would",
    "should", "will", "one", "two", "three", "five", "ten", "out", "up", "about", "get", "got", "put", "made", "make",
    "across", "along", "every", "still", "him", "her", "his", "she", "he", "you", "your",
    "i", "me", "my", "year", "years", "month", "months", "day", "days", "time", "times", "way", "kind", "kinds",
    "people", "anything", "someone", "nobody", "everything", "thing", "things", "together", "often", "long", "longest",
})
GENERIC_COLUMN_WORDS = frozenset({"id", "key", "code", "no", "num", "name", "last", "update", "date", "type", "desc"})
NAME, ABBREV, PART, COLUMN, VALUE = 3.0, 2.4, 1.5, 1.2, 1.0
NAMESPACE = 0.4  # a namespace word (`hospital_`, `tpch_`) the question says
MEANING = 4.0  # weight of the cosine similarity above its per-question median
SYNONYM, SYNONYMS, SYNONYM_FLOOR = 2.0, 6, 0.2  # nearest schema words to a question word
LAYER_SHARE = 0.6  # a layer prefix starts most names of its database
NEIGHBOUR, HOPS, SECOND = 0.5, 3, 0.5  # a table inherits half of its best joined table's score, up to 3 joins away
CLOSE_TOP, PATH_MAX = 8, 3  # join paths are closed between the first tables of the ranking  # share of a joined table's score a table inherits
CHARS_PER_TOKEN = 3.6  # schema text, gpt-4o tokenizer; the agent trims by the exact count


def stem(word: str) -> str:
    """Plural to singular, enough to compare names with questions (`categories` -> category)."""
    for suffix, repl in (("ies", "y"), ("sses", "ss"), ("shes", "sh"), ("ches", "ch"), ("xes", "x"), ("s", "")):
        if len(word) > 3 and word.endswith(suffix) and not word.endswith("ss"):
            return word[: -len(suffix)] + repl
    return word


def words(text: str) -> list[str]:
    """`sbCustomer` -> [sb, customer]; `order_details` -> [order, details]."""
    spaced = _CAMEL.sub(" ", str(text)).replace("_", " ")
    return _WORD.findall(spaced.lower())


def question_words(question: str) -> list[str]:
    """Content words, stemmed, in order (no camel-case split: `DVDs` is one word)."""
    found = _WORD.findall(str(question).lower().replace("_", " "))
    return list(dict.fromkeys(stem(w) for w in found if w not in STOP and len(w) > 1 and not w.isdigit()))


@dataclass
class _Table:
    name: str
    entity: list[str]  # name words with namespace words set aside, stemmed
    namespace: list[str]
    columns: list[str]  # column words with the column prefix set aside, stemmed
    values: set[str]
    fk_targets: set[str] = field(default_factory=set)


@dataclass
class LinkPlan:
    """The tables a prompt carries: `full` with types and samples, `compact` with column names."""

    full: list[str]
    compact: list[str]
    terms: list[str] = field(default_factory=list)  # the question's words, to pick a wide table's columns

    def names_column(self, column: str) -> bool:
        """The question names this column (by a word of it): listed first when columns are cut."""
        return any(_word_match(q, stem(w)) for w in words(column) for q in self.terms)

    @property
    def tables(self) -> list[str]:
        return self.full + self.compact


class Linker:
    """Built once per schema index; `plan(question)` per question."""

    def __init__(self, index: LinkedSchema, embedder: Any = None) -> None:
        self.index = index
        self.embedder = embedder
        names = list(index.tables)
        self.namespaces = _namespaces(names)
        self.layers = _layers(names, self.namespaces)
        self.tables = {n: self._table(n) for n in names}
        self.neighbours: dict[str, set[str]] = {n: set() for n in names}
        for n, t in self.tables.items():
            for target in t.fk_targets:
                if target in self.neighbours and target != n:
                    self.neighbours[n].add(target)
                    self.neighbours[target].add(n)
        self._docs: Any = None
        self._vocab: Any = None

    # -- what each table is called --------------------------------------------------------

    def _table(self, name: str) -> _Table:
        info = self.index.tables[name]
        namespace, rest = self._split(name)
        prefix = column_prefix([tuple(words(c.name)) for c in info.columns], tuple(words(rest)))
        columns: list[str] = []
        for c in info.columns:
            cw = words(c.name)
            if prefix and len(cw) > 1 and cw[0] == prefix:
                cw = cw[1:]
            if cw and (glued := key_suffix((cw[-1],)))[1] and glued[0]:  # `custkey` -> cust
                cw = [*cw[:-1], glued[0][0]]
            columns += [stem(w) for w in cw if w not in GENERIC_COLUMN_WORDS and len(w) > 1]
            if c.description:
                columns += [stem(w) for w in words(c.description) if w not in STOP and len(w) > 2][:6]
        entity = [stem(w) for w in rest]
        # an abbreviated name (`rgns`, `ntn`) read through the table's own columns (`r_regionkey`)
        entity += [c for w in entity for c in columns if len(c) > len(w) >= 2 and abbreviates(w, c)][:2]
        if self.embedder is not None:  # `cstmr`, `spplr`: the commonest English words it abbreviates
            vocab = english_words()
            entity += [v for w in entity if len(w) >= 4 and w not in vocab for v in expansions(w)]
        values = {stem(w) for c in info.columns for v in (c.values or c.samples) for w in words(v) if len(w) > 2}
        targets = {fk.split("->")[1].strip().split(".")[0] for fk in info.foreign_keys if "->" in fk}
        return _Table(name, list(dict.fromkeys(entity)), namespace, list(dict.fromkeys(columns)), values, targets)

    def _split(self, name: str) -> tuple[list[str], list[str]]:
        """(namespace words, entity words): `tpch_sb_customer` -> ([tpch, sb], [customer]);
        a glued layer prefix is cut off too (`sbcustomer` -> sb + customer)."""
        ws = words(name)
        namespace: list[str] = []
        if len(ws) > 1 and ws[0] in self.namespaces:
            namespace.append(ws.pop(0))
        layer, glued = self.layers.get(namespace[0] if namespace else "", (frozenset(), None))
        if len(ws) > 1 and ws[0] in layer:
            namespace.append(ws.pop(0))
        elif glued and ws and ws[0].startswith(glued) and len(ws[0]) - len(glued) >= 3:
            namespace.append(glued)
            ws[0] = ws[0][len(glued):]
        return namespace, ws or words(name)

    # -- scoring --------------------------------------------------------------------------

    def scores(self, question: str) -> dict[str, float]:
        qwords = question_words(question)
        out = {n: self._lexical(t, qwords) for n, t in self.tables.items()}
        for word, weight in self._synonyms(qwords).items():
            for n, t in self.tables.items():
                if word in t.entity:
                    out[n] += weight
        meaning = self._meaning(question)
        if meaning:
            for n, s in meaning.items():
                out[n] += s
        spread = dict(out)
        for _ in range(HOPS):  # a question names some tables of a database; its keys lead to the rest
            spread = {n: out[n] + NEIGHBOUR * _top2(spread[m] for m in self.neighbours[n]) for n in out}
        return spread

    def _lexical(self, t: _Table, qwords: list[str]) -> float:
        score = 0.0
        for i, q in enumerate(qwords):
            nxt = qwords[i + 1] if i + 1 < len(qwords) else None
            best = 0.0
            for w in t.entity:
                best = max(best, _word_match(q, w))
            if best:
                score += best
                continue
            if q in t.namespace:
                score += NAMESPACE
                continue
            col = max((_word_match(q, w) for w in t.columns), default=0.0) or (NAME if nxt and any(
                len(w) >= 5 and abbreviates_run(w, (q, nxt)) for w in t.columns) else 0.0)
            if col:
                score += COLUMN * col / NAME
            elif q in t.values:
                score += VALUE
        return score

    def _synonyms(self, qwords: list[str]) -> dict[str, float]:
        """Entity words of this schema that mean what a question word says (`client` ->
        customer, `vendor` -> supplier, `continent` -> region): the nearest words of the schema's
        own vocabulary in WordLlama's space, weighted by similarity relative to the nearest."""
        if self.embedder is None or not qwords:
            return {}
        import numpy as np

        if self._vocab is None:
            vocab = sorted({w for t in self.tables.values() for w in t.entity if len(w) > 2})
            self._vocab = (vocab, self.embedder.embed(vocab))
        vocab, vectors = self._vocab
        out: dict[str, float] = {}
        sims = vectors @ self.embedder.embed(qwords).T  # vocab x question words
        for j, q in enumerate(qwords):
            col = sims[:, j]
            order = [i for i in np.argsort(-col) if vocab[i] != q][:SYNONYMS]
            top = float(col[order[0]]) if order else 0.0
            for i in order:
                sim = float(col[i])
                if sim >= SYNONYM_FLOOR and top > 0:
                    out[vocab[i]] = max(out.get(vocab[i], 0.0), SYNONYM * (sim / top) ** 2)
        return out

    def _meaning(self, question: str) -> dict[str, float] | None:
        if self.embedder is None:
            return None
        import numpy as np

        names = list(self.tables)
        if self._docs is None:
            self._docs = self.embedder.embed([self._doc(n) for n in names])
        sims = self._docs @ self.embedder.embed([question])[0]
        base = float(np.median(sims))
        return {n: MEANING * max(0.0, float(s) - base) for n, s in zip(names, sims, strict=True)}

    def _doc(self, name: str) -> str:
        t = self.tables[name]
        info = self.index.tables[name]
        samples = [v for c in info.columns for v in c.samples[:2]][:8]
        return f"{' '.join(t.entity)}: {' '.join(t.columns[:24])}. {' '.join(samples)}"

    # -- ranking and closure --------------------------------------------------------------

    def rank(self, question: str) -> list[str]:
        """Every table, most likely first. Among the first `CLOSE_TOP`, tables that the key graph
        puts between two of them (a link table, or the one or two tables on the shortest join
        path) follow right after the second of the two."""
        scores = self.scores(question)
        order = sorted(scores, key=lambda n: (-scores[n], n))
        out: list[str] = []
        placed: set[str] = set()
        for name in order:
            if name in placed:
                continue
            out.append(name)
            placed.add(name)
            if len(out) > CLOSE_TOP:
                continue
            for other in out[:CLOSE_TOP]:
                for between in self._between(name, other, scores):
                    if between not in placed:
                        out.append(between)
                        placed.add(between)
        return out

    def _between(self, a: str, b: str, scores: dict[str, float]) -> list[str]:
        """The tables on the best shortest join path from `a` to `b` (at most `PATH_MAX` in
        between); none when they join directly or not at all."""
        paths: list[list[str]] = [[a]]
        for _ in range(PATH_MAX + 1):
            longer = [[*p, m] for p in paths for m in self.neighbours[p[-1]] if m not in p]
            done = [p[1:-1] for p in longer if p[-1] == b]
            if done:
                return max(done, key=lambda p: (sum(scores[t] for t in p), p))
            paths = [p for p in longer if p[-1] != b][:2000]
        return []

    def plan(self, question: str, full: int = 6, budget_tokens: float | None = None,
             extra: list[str] | None = None) -> LinkPlan:
        """The ranked tables fitted to a budget of schema-text tokens (estimated from characters;
        None: the first `full` tables only). The budget also pays for the names of the tables
        left out, which the prompt lists."""
        ranked = self.rank(question)
        head = ranked[:full]
        head += [t for t in dict.fromkeys(extra or []) if t in self.tables and t not in head]  # the catalog's
        ranked = head + [t for t in ranked if t not in head]
        qwords = question_words(question)
        if budget_tokens is None:
            return LinkPlan(head, [], qwords)
        cost = {n: (len(self.index.render([n])) + 1) / CHARS_PER_TOKEN for n in head}
        while len(head) > 1 and sum(cost.values()) > budget_tokens / 2:  # very wide tables: fewer in full
            cost.pop(head.pop())
        rest = ranked[len(head):]
        spent = sum(cost.values()) + sum(len(n) + 2 for n in rest) / CHARS_PER_TOKEN
        compact: list[str] = []
        for name in rest:
            line = (len(self.index.render_compact([name])) + 1 - len(name) - 2) / CHARS_PER_TOKEN  # upper bound
            if spent + line > budget_tokens:
                break
            compact.append(name)
            spent += line
        return LinkPlan(head, compact, qwords)


@lru_cache(maxsize=1)
def _english() -> tuple[tuple[str, ...], frozenset[str]]:
    """Whole English words of WordLlama's tokenizer, commonest first (its ids follow frequency)."""
    try:
        from tokenizers import Tokenizer

        from dia_assets.platform.embeddings import wordllama_files

        vocab = Tokenizer.from_file(str(wordllama_files()[1])).get_vocab()
    except Exception:  # no tokenizer: abbreviations are read through columns only
        return (), frozenset()
    ordered = tuple(w[1:] for w, _ in sorted(vocab.items(), key=lambda kv: kv[1])
                    if w.startswith("\u2581") and w[1:].isalpha() and w[1:].islower() and len(w) > 3)
    return ordered, frozenset(ordered)


def english_words() -> frozenset[str]:
    return _english()[1]


@lru_cache(maxsize=4096)
def expansions(word: str, k: int = 2) -> tuple[str, ...]:
    """The `k` commonest English words that `word` abbreviates (`cstmr` -> customer)."""
    return tuple(stem(v) for v in [v for v in _english()[0] if len(v) > len(word) and abbreviates(word, v)][:k])


def _top2(values: Any) -> float:
    """The best joined score plus `SECOND` of the next: a table that joins two relevant tables
    (an order line between orders and parts) outranks one that joins only one."""
    best = sorted(values, reverse=True)[:2]
    return (best[0] + SECOND * best[1] if len(best) == 2 else best[0]) if best else 0.0


def _namespaces(names: list[str]) -> frozenset[str]:
    """First words that start the names of several tables (`tpch_`, `sb_`, `dim_`): names of a
    database or a layer, not of what a table holds. A word that is a whole table's name
    (`order` of `orders`, `order_items`) stays an entity word."""
    firsts: Counter[str] = Counter()
    single = set()
    for n in names:
        ws = words(n)
        if len(ws) > 1:
            firsts[ws[0]] += 1
        elif ws:
            single.add(stem(ws[0]))
    return frozenset(w for w, k in firsts.items() if k >= 3 and stem(w) not in single)


def _layers(names: list[str], namespaces: frozenset[str]) -> dict[str, tuple[frozenset[str], str | None]]:
    """Per namespace (or none): the layer words that start most of its names after the
    namespace (`sb_`, `dim_`, `t_`), and a layer prefix glued to most of them (`sbcustomer`,
    `tcustomer`): `LAYER_SHARE` of a group of 3+ tables, longest first."""
    groups: dict[str, list[list[str]]] = {}
    for n in names:
        ws = words(n)
        key = ws[0] if len(ws) > 1 and ws[0] in namespaces else ""
        groups.setdefault(key, []).append(ws[1:] if key else ws)
    out = {}
    for key, members in groups.items():
        if len(members) < 3:
            continue
        need = LAYER_SHARE * len(members)
        firsts = Counter(m[0] for m in members if len(m) > 1)
        layer = frozenset(w for w, k in firsts.items() if k >= need and k >= 3)
        glued = None
        for size in (4, 3, 2, 1):
            heads = Counter(m[0][:size] for m in members if m and len(m[0]) - size >= 3)
            head, k = heads.most_common(1)[0] if heads else ("", 0)
            if k >= max(3, need if size > 1 else 0.8 * len(members)) and head not in layer:
                glued = head
                break
        if layer or glued:
            out[key] = (layer, glued)
    return out


def _word_match(q: str, w: str) -> float:
    """How well a question word names a schema word: same (stemmed), abbreviated, glued."""
    if q == w:
        return NAME
    if len(w) >= 3 and len(q) >= 4 and abbreviates(w, q):
        return ABBREV
    if len(q) >= 4 and len(w) >= 4 and (w.endswith(q) or w.startswith(q)) and len(w) - len(q) <= 4:
        return ABBREV
    if len(q) >= 5 and q in w:
        return PART
    return 0.0

