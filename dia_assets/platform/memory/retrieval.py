"""Hybrid retrieval (Data Agents §3-B3): vector top-k, full-text matches, metadata filters,
fused by a weighted score of similarity, text match, recency and importance.

One round trip: HNSW candidates and full-text candidates are unioned in SQL, then every
candidate gets its exact cosine similarity and an OR-query text rank; Python fuses them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg import sql
from pydantic import BaseModel, Field

from dia_assets.platform.memory.migrations import SCHEMA
from dia_assets.platform.memory.models import Kind, MemoryRef, Status, Tier


class MemoryFilter(BaseModel):
    """Metadata filters. With `scope`, session lessons must come from that database while
    examples and cross-session lessons are global; `strict_scope` applies scope to all."""

    tiers: list[Tier] | None = None
    kinds: list[Kind] | None = None
    scope: str | None = None
    strict_scope: bool = False
    statuses: list[Status] = Field(default_factory=lambda: [Status.ACTIVE])
    max_age_days: float | None = None
    min_importance: float | None = None


@dataclass(frozen=True)
class RetrievalWeights:
    """Weights of the fused score; each component lies in [0, 1]."""

    similarity: float = 0.6
    text: float = 0.15
    recency: float = 0.1
    importance: float = 0.15
    half_life_days: float = 30.0


def filter_clause(f: MemoryFilter) -> tuple[sql.Composable, dict[str, Any]]:
    """WHERE conditions on alias `i`, with their parameters."""
    parts: list[sql.Composable] = [sql.SQL("i.status = ANY(%(f_status)s)")]
    params: dict[str, Any] = {"f_status": [s.value for s in f.statuses]}
    if f.tiers:
        parts.append(sql.SQL("i.tier = ANY(%(f_tiers)s)"))
        params["f_tiers"] = [t.value for t in f.tiers]
    if f.kinds:
        parts.append(sql.SQL("i.kind = ANY(%(f_kinds)s)"))
        params["f_kinds"] = [k.value for k in f.kinds]
    if f.scope is not None:
        if f.strict_scope:
            parts.append(sql.SQL("i.scope = %(f_scope)s"))
        else:
            parts.append(sql.SQL("(i.scope = %(f_scope)s OR i.tier <> 'session')"))
        params["f_scope"] = f.scope
    if f.max_age_days is not None:
        parts.append(sql.SQL("i.created_at >= now() - make_interval(secs => %(f_age)s)"))
        params["f_age"] = float(f.max_age_days) * 86400.0
    if f.min_importance is not None:
        parts.append(sql.SQL("i.importance >= %(f_imp)s"))
        params["f_imp"] = float(f.min_importance)
    return sql.SQL(" AND ").join(parts), params


_VECTOR_ANN = """v AS (
    SELECT i.id FROM {schema}.items i WHERE {where}
    ORDER BY i.embedding <=> %(q)s LIMIT %(n)s
)"""

# MATERIALIZED keeps the planner from using the (post-filtering) HNSW index: exact search.
_VECTOR_EXACT = """v0 AS MATERIALIZED (
    SELECT i.id, i.embedding FROM {schema}.items i WHERE {where}
), v AS (
    SELECT id FROM v0 ORDER BY embedding <=> %(q)s LIMIT %(n)s
)"""

_HYBRID = """
WITH {vector}, t0 AS MATERIALIZED (
    SELECT i.id, i.tsv FROM {schema}.items i
    WHERE {where} AND i.tsv @@ plainto_tsquery('english', %(text)s)
    LIMIT %(cap)s
), t AS (
    SELECT id FROM t0 ORDER BY ts_rank_cd(tsv, plainto_tsquery('english', %(text)s)) DESC
    LIMIT %(n)s
), c AS (SELECT id FROM v UNION SELECT id FROM t)
SELECT i.id, i.title, i.tier, i.kind, i.scope,
       1 - (i.embedding <=> %(q)s) AS similarity,
       ts_rank_cd(i.tsv, replace(plainto_tsquery('english', %(text)s)::text, '&', '|')::tsquery, 32)
           AS text_score,
       EXTRACT(EPOCH FROM now() - coalesce(i.last_used_at, i.updated_at)) / 86400.0 AS age_days,
       i.importance,
       (SELECT count(*) FROM v) AS n_vector
FROM c JOIN {schema}.items i ON i.id = c.id
"""


def hybrid_query(f: MemoryFilter, exact: bool = False) -> tuple[sql.Composable, dict[str, Any]]:
    """The one-round-trip hybrid query; rows end with the vector stage's row count."""
    where, params = filter_clause(f)
    schema = sql.Identifier(SCHEMA)
    vector = sql.SQL(_VECTOR_EXACT if exact else _VECTOR_ANN).format(schema=schema, where=where)
    query = sql.SQL(_HYBRID).format(vector=vector, schema=schema, where=where)
    return query, params


def fuse(rows: list[tuple[Any, ...]], weights: RetrievalWeights, k: int) -> list[MemoryRef]:
    """Weighted score of the four signals; ties broken by id for determinism."""
    refs: list[MemoryRef] = []
    for id_, title, tier, kind, scope, sim, text_score, age_days, importance, *_ in rows:
        similarity = max(0.0, min(1.0, float(sim)))
        recency = 0.5 ** (max(0.0, float(age_days)) / weights.half_life_days)
        score = (
            weights.similarity * similarity
            + weights.text * float(text_score)
            + weights.recency * recency
            + weights.importance * float(importance)
        )
        refs.append(
            MemoryRef(
                id=id_,
                title=title,
                score=round(score, 6),
                tier=Tier(tier),
                kind=Kind(kind),
                scope=scope,
                similarity=round(similarity, 6),
                text_score=round(float(text_score), 6),
                recency=round(recency, 6),
                importance=float(importance),
            )
        )
    refs.sort(key=lambda r: (-r.score, r.id))
    return refs[:k]
