"""Sanity checks that need no contract (issue 28): grounded in what the Interpreter knows
(keys, semantic types), the question's wording and read-only probes. Each returns the same
`Check` as the contract checks, so a failure goes back to repair like any other. Precision
first: a check speaks only on strong evidence, since a false alarm costs a correct answer."""

from __future__ import annotations

from sqlglot import exp

from dia_assets.agents.query.dialects import Database
from dia_assets.agents.query.sanity.aggregates import check_aggregate_semantics
from dia_assets.agents.query.sanity.counts import check_count_nulls
from dia_assets.agents.query.sanity.grain import check_grain
from dia_assets.agents.query.sanity.inner import check_inner_joins
from dia_assets.agents.query.sanity.joins import check_join_keys
from dia_assets.agents.query.sanity.knowledge import Knowledge
from dia_assets.agents.query.sanity.wording import check_aggregate_wording
from dia_assets.agents.query.schema import SchemaIndex
from dia_assets.contracts.query_result import Check

__all__ = ["sanity_checks"]


def sanity_checks(tree: exp.Expression, question: str | None, db: Database, index: SchemaIndex,
                  timeout_s: float = 10.0) -> list[Check]:
    """Every contract-free check on one executed query (`tree` qualified against the schema)."""
    know = Knowledge(index)
    return [
        check_join_keys(tree, know, db, timeout_s),
        check_aggregate_semantics(tree, know),
        check_count_nulls(tree, question, know, db, timeout_s),
        check_inner_joins(tree, question, know, db, timeout_s),
        check_grain(tree, question, know),
        check_aggregate_wording(tree, question),
    ]
