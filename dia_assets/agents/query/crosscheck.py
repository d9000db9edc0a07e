"""Feedback beyond the contract (Data Agents §III-D, "Feedback Loop Management"):

- multi-candidate cross-validation: several candidate SQLs are executed and their results
  compared; a result's frequency among the candidates is each candidate's coverage score;
  the candidate with the highest coverage, held by more than one candidate and by no rival
  result, is confirmed; the others (outliers) go back to repair.
- pipeline-to-NL: the executed SQL described back in words (from the sqlglot tree, no model)
  and compared with the question: by word overlap, by embedding similarity, or by a judge
  model in the loop.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp

from dia_assets.platform.sql.rows import normalize_rows


@dataclass
class Vote:
    index: int
    frequency: int
    coverage: float
    confirmed: bool


def _key(rows: Sequence[Sequence[Any]] | None, ordered: bool) -> Any:
    if rows is None:
        return None
    norm = normalize_rows(rows)
    return tuple(norm) if ordered else tuple(sorted(Counter(norm).items(), key=repr))


def cross_validate(results: Sequence[Sequence[Sequence[Any]] | None], ordered: bool = False) -> list[Vote]:
    """One vote per candidate result (None: the candidate did not run, never confirmed)."""
    keys = [_key(r, ordered) for r in results]
    freq = Counter(k for k in keys if k is not None)
    top = max(freq.values(), default=0)
    winners = [k for k, n in freq.items() if n == top]
    n = len(results) or 1
    return [Vote(index=i, frequency=freq.get(k, 0) if k is not None else 0,
                 coverage=round((freq.get(k, 0) if k is not None else 0) / n, 4),
                 confirmed=k is not None and top > 1 and len(winners) == 1 and k == winners[0])
            for i, k in enumerate(keys)]


_OP_WORDS = {exp.EQ: "equal to", exp.NEQ: "not equal to", exp.GT: "greater than", exp.GTE: "at least",
             exp.LT: "less than", exp.LTE: "at most", exp.Like: "like", exp.ILike: "like",
             exp.In: "one of", exp.Between: "between"}
_AGG_WORDS = {exp.Count: "number of", exp.Sum: "total", exp.Avg: "average", exp.Min: "minimum",
              exp.Max: "maximum"}


def _words(name: str) -> str:
    return re.sub(r"[_\W]+", " ", name).strip()


def describe_sql(sql: str, dialect: str) -> str:
    """The query in plain words: what it returns, per what, under which conditions, in which
    order and how many rows."""
    try:
        tree = sqlglot.parse_one(sql, read=dialect)
    except sqlglot.errors.SqlglotError:
        return ""
    if not isinstance(tree, exp.Select):
        return ""
    parts = []
    shown = []
    for p in tree.expressions:
        inner = p.this if isinstance(p, exp.Alias) else p
        agg = next((w for cls, w in _AGG_WORDS.items() if isinstance(inner, cls) or inner.find(cls)), None)
        distinct = " distinct" if inner.find(exp.Distinct) else ""
        cols = " ".join(_words(c.name) for c in inner.find_all(exp.Column)) or "rows"
        shown.append(f"{agg}{distinct} {cols}" if agg else cols)
    parts.append(("distinct " if tree.args.get("distinct") else "") + "the " + ", ".join(shown))
    group = tree.args.get("group")
    if group is not None:
        parts.append("for each " + ", ".join(_words(g.sql()) for g in group.expressions))
    tables = [_words(t.name) for t in tree.find_all(exp.Table)]
    parts.append("from " + ", ".join(dict.fromkeys(tables)))
    if any((j.side or "").upper() == "LEFT" for j in tree.find_all(exp.Join)):
        parts.append("including those without a match")
    for where in tree.find_all(exp.Where, exp.Having):
        for pred in where.find_all(*_OP_WORDS):
            cols = " ".join(_words(c.name) for c in pred.find_all(exp.Column))
            lits = " ".join(str(lit.name) for lit in pred.find_all(exp.Literal))
            neg = "not " if isinstance(pred.parent, exp.Not) else ""
            parts.append(f"where {cols} {neg}{_OP_WORDS[type(pred)]} {lits}".strip())
    order = tree.args.get("order")
    if order is not None:
        parts.append("ordered by " + ", ".join(
            f"{_words(o.this.sql())} {'highest first' if o.args.get('desc') else 'lowest first'}"
            for o in order.expressions))
    limit = tree.args.get("limit")
    if limit is not None:
        value = limit.args.get("expression") or limit.this
        parts.append(f"top {value.sql() if value is not None else ''}")
    return "; ".join(parts)


_STOP = {"the", "a", "an", "of", "in", "on", "for", "by", "and", "or", "to", "is", "are", "was", "were",
         "which", "what", "who", "how", "many", "much", "do", "does", "did", "each", "every", "with", "from",
         "where", "that", "their", "there", "be", "as", "at", "it", "its", "this", "those", "these", "have",
         "has", "s", "give", "list", "show", "me", "all"}


def content_words(text: str) -> set[str]:
    out = set()
    for w in re.findall(r"[a-z0-9]+", text.lower()):
        if w in _STOP:
            continue
        out.add(w[:-1] if len(w) > 4 and w.endswith("s") else w)
    return out


def nl_agreement(description: str, reference: str) -> float:
    """How much of the reference (the question, or a description it should match) the SQL's
    description covers: the share of the reference's content words it contains."""
    ref = content_words(reference)
    if not ref:
        return 1.0
    return round(len(ref & content_words(description)) / len(ref), 4)


def nl_similarity(description: str, reference: str, embedder: Any = None) -> float:
    """Cosine similarity of the SQL's description and the question in the memory's embedding
    space (WordLlama by default, offline)."""
    if embedder is None:
        from dia_assets.platform.embeddings import make_embedder

        embedder = make_embedder()
    vectors = embedder.embed([description, reference])
    return round(float((vectors[0] * vectors[1]).sum()), 4)
