"""The confidence scale lives in contracts/policy.py: no module compares a confidence to a literal."""

from __future__ import annotations

import ast
from pathlib import Path

from dia_assets.contracts.policy import AMBIGUOUS, HIGH, REPORTED, is_ambiguous, is_high

ROOT = Path(__file__).resolve().parents[1]
CODE = [p for d in ("dia_assets", "resources", "sensors", "bench") for p in (ROOT / d).rglob("*.py")]


def _literal_confidence_comparisons(tree: ast.AST) -> list[int]:
    """Lines where a `*confidence*` name or attribute is compared with a threshold written in place (0 and 1 are bounds)."""
    def is_confidence(node: ast.AST) -> bool:
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
        return "confidence" in name.lower()

    hits = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(is_confidence(s) for s in sides) and any(
                    isinstance(s, ast.Constant) and isinstance(s.value, float) and 0 < s.value < 1 for s in sides):
                hits.append(node.lineno)
    return hits


def test_scale_is_ordered() -> None:
    assert 0 < REPORTED < HIGH < 1 and AMBIGUOUS == (REPORTED, HIGH)
    assert is_high(HIGH) and not is_high(HIGH - 0.01)
    assert is_ambiguous(REPORTED) and not is_ambiguous(HIGH) and not is_ambiguous(REPORTED - 0.01)


def test_no_confidence_compared_with_a_literal() -> None:
    found = {str(p.relative_to(ROOT)): lines for p in CODE
             if (lines := _literal_confidence_comparisons(ast.parse(p.read_text(), str(p))))}
    assert found == {}, f"use dia_assets.contracts.policy instead of a literal: {found}"


def test_the_check_finds_a_literal() -> None:
    assert _literal_confidence_comparisons(ast.parse("if fk.confidence >= 0.8:\n    pass\n")) == [1]
    assert _literal_confidence_comparisons(ast.parse("if fk.confidence >= HIGH:\n    pass\n")) == []
