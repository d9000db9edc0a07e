"""The cheap learned stage: a logistic regression trained on the labels the strong model gave
to a random sample, over WordLlama vectors plus TF-IDF words (a bag-of-words model beats
embedding similarity on most text tasks; the two together beat either). Its answers are
only used where `calibrate.certify` has shown, on rows it never saw, that they are precise
enough. scikit-learn is imported here only, when an operator trains a proxy."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

NAME = "logistic regression on WordLlama vectors + TF-IDF"


def features(texts: Sequence[str], vectors: np.ndarray, extra: np.ndarray | None = None) -> Any:
    """One sparse row per text: its vector, its TF-IDF words and bigrams (vocabulary fitted on
    the column itself, no labels involved) and any extra dense columns (similarities)."""
    from scipy.sparse import csr_matrix, hstack
    from sklearn.feature_extraction.text import TfidfVectorizer

    blocks = [csr_matrix(np.asarray(vectors, dtype=np.float64))]
    try:
        tfidf = TfidfVectorizer(ngram_range=(1, 2), min_df=2, max_features=20000, sublinear_tf=True)
        blocks.append(tfidf.fit_transform([t or "" for t in texts]))
    except ValueError:  # no word occurs twice: vectors alone
        pass
    if extra is not None and len(extra):
        blocks.append(csr_matrix(np.asarray(extra, dtype=np.float64)))
    return hstack(blocks, format="csr")


@dataclass
class Proxy:
    """A trained classifier, or a constant when the sample held a single value (then
    certification decides whether that value may be given to every other row)."""

    model: Any
    constant: Hashable | None = None
    classes: tuple[Hashable, ...] = ()

    def predict(self, x: Any) -> tuple[list[Hashable], np.ndarray]:
        """(value, confidence) per row: the most probable value and its probability."""
        if self.model is None:
            return [self.constant] * x.shape[0], np.ones(x.shape[0])
        proba = self.model.predict_proba(x)
        best = proba.argmax(axis=1)
        codes = list(self.model.classes_)  # integer codes into self.classes
        return [self.classes[int(codes[i])] for i in best], proba[np.arange(len(best)), best]


C = 4.0  # inverse L2 strength; features are unit-norm blocks


def train(x: Any, labels: Sequence[Hashable], seed: int = 0) -> Proxy | None:
    """Fit on the judged rows (None when there is nothing to learn from)."""
    from sklearn.linear_model import LogisticRegression

    values = sorted(set(labels), key=str)
    if not values:
        return None
    if len(values) == 1:
        return Proxy(None, constant=values[0])
    code = {v: n for n, v in enumerate(values)}
    model = LogisticRegression(C=C, max_iter=2000, random_state=seed)
    model.fit(x, np.asarray([code[v] for v in labels]))
    return Proxy(model, classes=tuple(values))


def pair_features(left: np.ndarray, right: np.ndarray) -> Any:
    """A (left, right) pair as the elementwise product and distance of their unit vectors
    plus their cosine: what a pair has in common, whatever the texts' wording."""
    from scipy.sparse import csr_matrix

    cos = np.sum(left * right, axis=1, keepdims=True)
    return csr_matrix(np.hstack([left * right, np.abs(left - right), cos]).astype(np.float64))
