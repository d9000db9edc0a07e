"""How the evidence about a key candidate becomes a confidence in [0, 1]: the one place to
change the combination (the terms are written here and computed below).

Foreign keys. Each candidate (`features.Candidate`: its name evidence and what the data says,
`features.Measure`) gets a score, a sum of documented terms (`score_terms`), turned into a
confidence by the logistic function:

    name      6 * name evidence - 2       same name or names the table +4, role +2.8, stem +0.4
    coverage  1 - 8 * the share of distinct values not found (all found +1, 0.9 -> +0.2, 0.8 -> -0.6)
    values    text keys +1; integer keys that spread over the parent +0.5; integers in a corner
              of a large key range (a small count or size among sequence numbers) -3 per missing
              unit of name evidence, at most -1.5 (a reference named exactly may use few keys); values
              that also fit the keys of two or more other parents -0.5
    bias      -2.5

Special cases (`score_candidates`): a structural reference (a child flattened from its parent's
nested array) is 1.0; a candidate with no values to measure has its name alone (0.85 for an
exact name, HIGH for name evidence of at least 0.8, else REPORTED); the only parent with name
evidence that covers every value, with no negative value term, is raised to HIGH.

Primary keys (`pk_confidence`): a single column from its identifier score, a composite from its
weakest column, `COMPOSITE_PENALTY` less per extra column, never above 0.9.
"""

from __future__ import annotations

import math

from dia_assets.agents.interpreter.keys.features import Candidate, family
from dia_assets.contracts.policy import HIGH, REPORTED

__all__ = ["COMPOSITE_PENALTY", "CORNER", "pk_confidence", "score_candidates", "score_terms"]

COMPOSITE_PENALTY = 0.15  # ranking cost of each extra key column
CORNER = 0.1  # integer values below this share of the parent's range sit in a corner of it


def pk_confidence(cols: list[str], score: float) -> float:
    """Single keys from their score; composites from their weakest column, a little
    less for each extra column, never above 0.9."""
    extra = len(cols) - 1
    if not extra:
        return round(min(1.0, 0.6 + 0.4 * score), 2)
    weakest = score + COMPOSITE_PENALTY * extra
    return round(max(0.3, min(0.9, 0.5 + 0.4 * weakest - 0.05 * extra)), 2)


def score_terms(c: Candidate, ambiguity: int) -> dict[str, float]:
    """The documented terms of a candidate's score (module docstring). `ambiguity`: how many
    other parents' keys also hold every value of the child column."""
    terms = {"bias": -2.5, "name": 6 * c.name.score - 2}
    m = c.measure
    if m is None:
        return terms
    terms["coverage"] = 1.0 - 8 * (1 - m.coverage)
    terms["values"] = _value_term(c)
    if ambiguity >= 2:
        terms["ambiguous"] = -0.5
    return terms


def _value_term(c: Candidate) -> float:
    m = c.measure
    key = c.target.columns[0]
    if family(key) == "text":
        return 1.0 if m.distinct >= 3 else 0.3
    if m.child_max is None or m.parent_max is None or m.parent_max <= 0:
        return 0.0
    parent_keys = max(1, key.distinct_count)
    if m.child_max < CORNER * m.parent_max and m.covered < CORNER * parent_keys:
        return max(-1.5, -3 * (1 - c.name.score))  # a small count or size among sequence numbers
    return 0.5 if parent_keys >= 50 or m.covered >= 0.5 * parent_keys else 0.0


def score_candidates(cands: list[Candidate]) -> None:
    """Set each candidate's terms and confidence (module docstring, with its special cases)."""
    fits: dict[tuple[str, tuple[str, ...]], int] = {}
    named: dict[tuple[str, tuple[str, ...]], int] = {}
    for c in cands:
        named[c.child] = named.get(c.child, 0) + 1
        if c.measure is not None and c.measure.covered == c.measure.distinct:
            fits[c.child] = fits.get(c.child, 0) + 1
    for c in cands:
        if "structural" in c.terms:
            c.fk.confidence = 1.0
            continue
        if c.measure is None:  # no values to measure: the name alone, at most just HIGH
            c.terms = {"name only": c.name.score}
            c.fk.confidence = 0.85 if c.name.score >= 1.0 else HIGH if c.name.score >= 0.8 else REPORTED
            continue
        c.terms = score_terms(c, fits.get(c.child, 1) - 1)
        confidence = 1 / (1 + math.exp(-sum(c.terms.values())))
        if confidence < HIGH and named[c.child] == 1 and c.fk.coverage == 1.0 and c.terms.get("values", 0) >= 0:
            c.terms["sole parent"] = 0.0
            c.fk.evidence.append("the only parent with name evidence, and it covers every value")
            confidence = HIGH
        c.fk.confidence = round(confidence, 2)

