"""The confidence scale every agent reads: one place says what "high" means.

A key or reference at HIGH or above is acted on without review (the Schema Creator builds it, drift
watches it, join paths use it); between REPORTED and HIGH it is AMBIGUOUS: shown to the reviewer and
offered to the model for a second opinion; below REPORTED it is not reported.
"""

from __future__ import annotations

HIGH = 0.8
REPORTED = 0.5
AMBIGUOUS = (REPORTED, HIGH)


def is_high(confidence: float) -> bool:
    """Acted on without review."""
    return confidence >= HIGH


def is_ambiguous(confidence: float) -> bool:
    """Reported, but a person (or a model) should look."""
    return AMBIGUOUS[0] <= confidence < AMBIGUOUS[1]
