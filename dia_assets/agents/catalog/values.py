"""Value evidence: how close a question's words come to what a column holds, judged by its
values rather than its name.

A plain question often names the kind of thing a column's values are ("which genres are
there?" over `category.name` holding Action, Comedy, Drama; "what positions ..." over
`job_title` holding President, Accountant), a link no lexicon draws between the two names.
The column's sample values that contain letters are embedded and averaged into one unit
centroid (the column's "kind"); each question content word is compared with it and the best
cosine is the term. Identifiers and columns without worded values have no evidence (0):
numbers and codes say little to an embedding.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np

from dia_assets.agents.catalog.column_text import sample_values
from dia_assets.contracts.semantic_catalog import CatalogNode

MAX_VALUES = 20
MIN_VALUES = 2  # one value is an anecdote, not a kind


def value_texts(node: CatalogNode) -> list[str]:
    """The worded values a column's kind is judged from ([] for identifiers, non-columns)."""
    if node.level != "attribute" or node.identifier:
        return []
    values = sample_values(node.examples, limit=MAX_VALUES)
    return values if len(values) >= MIN_VALUES else []


def centroid(vectors: np.ndarray) -> np.ndarray | None:
    """Unit mean of unit rows; None when there are none or they cancel out."""
    if not len(vectors):
        return None
    rows = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-9)
    mean = rows.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 1e-9 else None


def value_evidence(question_vecs: np.ndarray, kind: np.ndarray | None) -> float:
    """Best cosine of any question word vector (unit rows) with the column's value centroid."""
    if kind is None or not len(question_vecs):
        return 0.0
    return max(float((question_vecs @ kind).max()), 0.0)


def kinds(nodes: Mapping[object, CatalogNode], embed: Callable[[list[str]], np.ndarray]
          ) -> dict[object, np.ndarray | None]:
    """Each node's value centroid, every distinct value embedded once, in one call."""
    texts = {key: value_texts(n) for key, n in nodes.items()}
    vocab: Sequence[str] = list(dict.fromkeys(v for vs in texts.values() for v in vs))
    vecs = dict(zip(vocab, embed(list(vocab)), strict=True)) if vocab else {}
    return {key: centroid(np.array([vecs[v] for v in vs])) if vs else None for key, vs in texts.items()}
