"""The one table of comparisons (platform/sql/predicates.py): every reader of predicates (the
verifier, literal filters, gold contracts, mutants) takes its kinds, mirrors, negations and
mutant swaps from it, so a change here is seen by all of them."""

from __future__ import annotations

import pytest
import sqlglot
from sqlglot import exp

from dia_assets.agents.query.verify import declared_op, tree_op
from dia_assets.platform.sql.predicates import (
    COMPARISONS,
    MIRRORED,
    NEGATED,
    boundary_swap,
    literal_filter,
)


def test_the_table_is_closed_under_mirror_negation_and_swap():
    kinds = {c.kind for c in COMPARISONS}
    assert len(kinds) == len(COMPARISONS)
    spellings = [s for c in COMPARISONS for s in c.spellings]
    assert len(spellings) == len(set(spellings))
    for c in COMPARISONS:
        for other in (c.mirror, c.negation, c.boundary):
            assert other is None or other in kinds, (c.kind, other)
    assert all(MIRRORED[MIRRORED[k]] == k for k in MIRRORED)
    assert all(NEGATED.get(NEGATED[k]) in (k, None) for k in NEGATED)


@pytest.mark.parametrize(("where", "kind"), [
    ("x > 5", "gt"), ("5 < x", "gt"), ("5 >= x", "le"), ("NOT x = 1", "ne"), ("x IN (1, 2)", "eq"),
    ("x ILIKE 'a%'", "like"), ("NOT x LIKE 'a%'", "nlike"), ("x IS NULL", "null"), ("NOT x IS NULL", "notnull"),
    ("x BETWEEN 1 AND 2", "between"),
])
def test_the_verifier_reads_kinds_from_the_table(where: str, kind: str):
    pred = sqlglot.parse_one(f"SELECT * FROM t WHERE {where}").args["where"].this
    pred = pred.this if isinstance(pred, exp.Not) else pred  # the comparison, under its NOT
    assert tree_op(pred, "x") == kind


def test_declared_spellings_and_literal_filters_agree_on_the_kind():
    tree = sqlglot.parse_one("SELECT * FROM t WHERE 5 < t.x")
    found = literal_filter(tree.args["where"].this, tree, set())
    assert found is not None and found["op"] == ">" and declared_op(found["op"]) == "gt"
    assert declared_op("GTE") == "ge" and declared_op("not  in") == "ne" and declared_op("~") is None


def test_mutants_swap_a_comparison_for_its_boundary():
    assert boundary_swap(exp.GT(this=exp.column("x"), expression=exp.Literal.number(1))) is exp.GTE
    assert boundary_swap(exp.EQ(this=exp.column("x"), expression=exp.Literal.number(1))) is exp.NEQ
    assert boundary_swap(exp.Like(this=exp.column("x"), expression=exp.Literal.string("a"))) is None
