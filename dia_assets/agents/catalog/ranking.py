"""How catalog search scores a node for a question: one score per candidate, from terms a
reader can check (the hit reports each of them).

    score = dense + ALIGN_WEIGHT * align + SPARSE_WEIGHT * sparse + ANSWER_WEIGHT * answer + prior

- `dense`: cosine similarity of the question's content words (question words such as "what",
  "how", "each" dropped: they say nothing about a column) and the node's text (for a column,
  what it holds: see column_text.py), in [-1, 1].
- `align`: word alignment of the question's content words with the node's name words (its
  label and its table's name): each question word takes its most similar name word (cosine of
  their embeddings), averaged over the question's words. A sentence embedding averages every
  word away; alignment keeps "earn" close to "salary" even when the rest of the text differs.
  A question word is compared through its noun lemma too, whichever is closer ("genres" /
  "genre": the static embedding of a plural can sit far from its lemma's). The mean is
  weighted by how rare each question word's match is among the candidate columns (`rarity`,
  an inverse document frequency): a word that every column of one table matches ("client" /
  `customers`, "items" / `order_details`) says which table, not which column, and the words
  that pick one column out decide between the columns of that table.
- `answer`: 1 when the column's semantic type is one the question's form expects ("when ...?"
  a date or a time; "how much / how long ...?" a number; "how many ...?" a count, a whole
  number, not a price or a rate), else 0: the expected answer type of question answering. No
  form, no term.
- `sparse`: BM25 of the question's words (PostgreSQL's English stemming and stop words) over
  the nodes' texts, squashed to [0, 1) as bm25 / (bm25 + SPARSE_HALF): shared rare words count,
  and a column's score does not run away with one repeated word.
- `prior`: what the node is, before the words are compared:
  * an identifier column (`CatalogNode.identifier`) gets IDENTIFIER_PENALTY unless the question
    asks for identifiers (`id`, `key`, `code`, `number` but not `number of`): ids and keys carry
    the entity's name, so they look like every question about the entity, but hold nothing a
    plain question asks about;
  * a column with one value or none (`distinct_count` <= 1: a load timestamp, an empty
    column) gets CONSTANT_PENALTY: it cannot answer a question about its rows.

Weights were set on the bench's tuned datasets (bench/catalog.py; pagila held out); the rarity
weighting and the count type were chosen on hr, classicmodels and Northwind only (pagila and
TPC-H held out).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dia_assets.contracts.semantic_catalog import CatalogNode

SPARSE_WEIGHT = 0.1
ALIGN_WEIGHT = 1.5
ANSWER_WEIGHT = 0.5
SPARSE_HALF = 3.0
LEXICAL_SIM = 1.0
MATCH_SIM = 0.9  # a question word 'matches' a name word: the same word or a lexicon synonym
IDENTIFIER_PENALTY = 0.25
CONSTANT_PENALTY = 0.3
BM25_K1, BM25_B = 1.2, 0.75

# words that make a sentence a question (or glue it), not what it is about
QUESTION_WORDS = frozenset(["a", "an", "the", "of", "in", "on", "at", "to", "for", "from", "by", "with", "and", "or", "is", "are", "was", "were", "be", "been", "do", "does", "did", "has", "have", "had", "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "much", "many", "each", "every", "all", "any", "some", "there", "their", "its", "it", "this", "that", "these", "those", "me", "my", "our", "we", "us", "you", "your", "i", "can", "could", "would", "should", "will", "shall", "may", "per", "as", "about", "into", "than", "then", "them", "they", "he", "she", "his", "her"])
IDENTIFIER_WORDS = frozenset({"id", "ids", "identifier", "identifiers", "key", "keys", "code", "codes",
                              "number", "numbers"})
_WORD = re.compile(r"[a-z0-9]+")
NUMBERS = frozenset({"integer", "decimal", "currency", "percentage"})
COUNTS = frozenset({"integer"})  # "how many" counts things: a whole number, not an amount or a rate
TIMES = frozenset({"date", "timestamp", "time"})
# "how <word>" -> the semantic types such a question expects
HOW = {"much": NUMBERS, "many": COUNTS, "long": NUMBERS, "often": NUMBERS, "old": NUMBERS | TIMES}


def content_words(question: str) -> str:
    """The question without its question words ("how much does each employee earn" -> "employee
    earn") and without the possessive's `s` and other one-letter pieces; the question itself when
    nothing else is left."""
    words = _WORD.findall(question.lower())
    kept = [w for w in words if w not in QUESTION_WORDS and len(w) > 1]
    return " ".join(kept) or question


def asks_for_identifier(question: str) -> bool:
    """The question asks for ids, keys, codes or numbers ("the number of" asks for a count)."""
    words = _WORD.findall(question.lower())
    return any(w in IDENTIFIER_WORDS and not (w.startswith("number") and nxt == "of")
               for w, nxt in zip(words, [*words[1:], ""], strict=True))


def expected_types(question: str) -> frozenset[str]:
    """Semantic types the question's form expects as its answer (module doc); empty if none."""
    words = _WORD.findall(question.lower())
    out: set[str] = set()
    if "when" in words:
        out |= TIMES
    for a, b in zip(words, words[1:], strict=False):
        if a == "how" and b in HOW:
            out |= HOW[b]
    return frozenset(out)


def name_words(node: CatalogNode) -> list[str]:
    """The words a question's words are aligned with: the node's label and its table's name."""
    words = _WORD.findall(node.label.lower())
    if node.level == "attribute" and node.table:
        words += _WORD.findall(node.table.lower().replace("_", " "))
    return [w for w in dict.fromkeys(words) if w not in QUESTION_WORDS]


def lexical_links(question: list[str], words: list[str], relation: Callable[[str, str], float]) -> np.ndarray:
    """How closely each question word (rows) and name word (columns) are related in the lexicon
    (`lexicon.relation`: 1 synonyms, less for a hypernym or derivation, 0 none). Two-word names
    count as one lemma on both sides (`last name`: `surname`): a pair's relation marks both of
    its words."""
    out = np.zeros((len(question), len(words)), dtype=np.float32)
    q_spans = [(i, i + 1, w) for i, w in enumerate(question)] + [
        (i, i + 2, f"{a}_{b}") for i, (a, b) in enumerate(zip(question, question[1:], strict=False))]
    w_spans = [(j, j + 1, w) for j, w in enumerate(words)] + [
        (j, j + 2, f"{a}_{b}") for j, (a, b) in enumerate(zip(words, words[1:], strict=False))]
    for i0, i1, q in q_spans:
        for j0, j1, w in w_spans:
            r = relation(q, w) if q != w else 0.0
            if r:
                out[i0:i1, j0:j1] = np.maximum(out[i0:i1, j0:j1], r)
    return out


def best_matches(question_vecs: np.ndarray, word_vecs: np.ndarray, links: np.ndarray | None = None,
                 lemma_vecs: np.ndarray | None = None) -> np.ndarray:
    """Per question word vector, its best similarity with any of the node's word vectors (unit
    rows): their cosine (or its lemma's, `lemma_vecs`, one row per question word, whichever is
    higher: a static embedding of an inflected form can be far from its lemma's, "genres" /
    "genre"), raised to LEXICAL_SIM where the lexicon links the two words (`links`, see
    `lexical_links`); zeros when the node has no words."""
    if not len(question_vecs) or not len(word_vecs):
        return np.zeros(len(question_vecs), dtype=np.float32)
    sim = question_vecs @ word_vecs.T
    if lemma_vecs is not None:
        sim = np.maximum(sim, lemma_vecs @ word_vecs.T)
    if links is not None:
        sim = np.maximum(sim, LEXICAL_SIM * links)
    return sim.max(axis=1)


def rarity(best: np.ndarray) -> np.ndarray:
    """Weight of each question word (columns of `best`: candidates x question words, as
    `best_matches` gives them) by how few candidates match it, an inverse document frequency:
    log((N + 1) / (n + 1)) / log(N + 1) over N candidates, n of them matching the word (the same
    word or a synonym: best similarity >= MATCH_SIM). 1 for a word no candidate matches, 0 for
    one that all match."""
    n_cand = best.shape[0]
    if not n_cand:
        return np.ones(best.shape[1], dtype=np.float32)
    matched = (best >= MATCH_SIM).sum(axis=0)
    return (np.log((n_cand + 1) / (matched + 1)) / np.log(n_cand + 1)).astype(np.float32)


def alignment(question_vecs: np.ndarray, word_vecs: np.ndarray, links: np.ndarray | None = None,
              lemma_vecs: np.ndarray | None = None, weights: np.ndarray | None = None) -> float:
    """Mean over the question's words of their `best_matches` with the node's words, weighted
    by `weights` (`rarity`; equal when None or all zero); 0 when either side has no words."""
    if not len(question_vecs) or not len(word_vecs):
        return 0.0
    best = best_matches(question_vecs, word_vecs, links, lemma_vecs)
    return weighted_mean(best, weights)


def weighted_mean(best: np.ndarray, weights: np.ndarray | None) -> float:
    """Mean of one node's per-word matches under the question words' weights (equal weights
    when there are none, or when every word is matched by every candidate)."""
    if not len(best):
        return 0.0
    if weights is None or float(weights.sum()) <= 0:
        return float(best.mean())
    return float((best * weights).sum() / weights.sum())


def prior(node: CatalogNode, wants_identifier: bool) -> float:
    """The node's score before its words are compared (module doc)."""
    if node.level != "attribute":
        return 0.0
    p = 0.0
    if node.identifier and not wants_identifier:
        p -= IDENTIFIER_PENALTY
    if node.distinct_count is not None and node.distinct_count <= 1 and (node.row_count or 0) > 1:
        p -= CONSTANT_PENALTY
    return p


@dataclass(frozen=True)
class Terms:
    """One candidate's score terms, as the hit reports them."""

    dense: float
    align: float
    sparse: float
    answer: float
    prior: float

    @property
    def score(self) -> float:
        return (self.dense + ALIGN_WEIGHT * self.align + SPARSE_WEIGHT * self.sparse
                + ANSWER_WEIGHT * self.answer + self.prior)


def score(node: CatalogNode, cosine: float, align: float, bm25: float | None, expected: frozenset[str],
          wants_identifier: bool) -> Terms:
    """Terms of one candidate (bm25 None: no word in common)."""
    b = max(bm25 or 0.0, 0.0)
    answer = 1.0 if node.level == "attribute" and node.semantic_type in expected else 0.0
    return Terms(dense=cosine, align=align, sparse=b / (b + SPARSE_HALF), answer=answer,
                 prior=prior(node, wants_identifier))
