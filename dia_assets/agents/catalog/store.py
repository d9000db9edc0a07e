"""The catalog in the shared memory's PostgreSQL (`dia_memory.catalog_nodes`, migration 3):
replaced whole per scope on refresh, searched with dense (pgvector cosine) and sparse (BM25
over PostgreSQL's full-text lexemes) retrieval, scored as `ranking.py` documents."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from dia_assets.agents.catalog.lexicon import lexicon
from dia_assets.agents.catalog.ranking import (
    BM25_B,
    BM25_K1,
    Terms,
    asks_for_identifier,
    best_matches,
    content_words,
    expected_types,
    lexical_links,
    name_words,
    rarity,
    score,
    weighted_mean,
)
from dia_assets.contracts.semantic_catalog import CatalogNode, SemanticCatalog
from dia_assets.platform.memory.migrations import SCHEMA
from dia_assets.platform.memory.store import MemoryStore


@dataclass
class CatalogHit:
    node: CatalogNode
    path: str
    score: float
    dense_rank: int | None
    sparse_rank: int | None
    terms: Terms | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.node.id, "level": self.node.level, "path": self.path,
                "table": self.node.table, "column": self.node.column, "score": round(self.score, 5),
                "dense_rank": self.dense_rank, "sparse_rank": self.sparse_rank,
                **({"dense": round(self.terms.dense, 5), "align": round(self.terms.align, 5),
                    "sparse": round(self.terms.sparse, 5), "answer": self.terms.answer,
                    "prior": self.terms.prior} if self.terms else {})}


class CatalogStore:
    """Catalog nodes beside the memory items, on the same connection and embedding model."""

    def __init__(self, memory: MemoryStore) -> None:
        self.memory = memory

    def replace(self, catalog: SemanticCatalog, vectors: np.ndarray) -> int:
        """Swap the scope's nodes for the new ones in one transaction; returns rows written."""
        if len(vectors) != len(catalog.nodes):
            raise ValueError("one vector per catalog node is required")

        def op(conn: Any) -> int:
            with conn.transaction():
                conn.execute(f"DELETE FROM {SCHEMA}.catalog_nodes WHERE scope = %s", (catalog.scope,))
                with conn.cursor() as cur:
                    cur.executemany(
                        f"INSERT INTO {SCHEMA}.catalog_nodes (scope, id, level, label, parent, table_name, "
                        "column_name, description, node, embedding) VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,%s)",
                        [(catalog.scope, n.id, n.level, n.label, n.parent, n.table, n.column, n.description,
                          Jsonb(n.model_dump()), np.asarray(v, dtype=np.float32))
                         for n, v in zip(catalog.nodes, vectors, strict=True)])
            return len(catalog.nodes)

        return self.memory.with_connection(op)

    def nodes(self, scope: str) -> list[CatalogNode]:
        rows = self.memory.with_connection(lambda conn: conn.execute(
            f"SELECT node FROM {SCHEMA}.catalog_nodes WHERE scope = %s ORDER BY id", (scope,)).fetchall())
        return [CatalogNode.model_validate(r[0]) for r in rows]

    def scopes(self) -> list[str]:
        rows = self.memory.with_connection(lambda conn: conn.execute(
            f"SELECT DISTINCT scope FROM {SCHEMA}.catalog_nodes ORDER BY 1").fetchall())
        return [r[0] for r in rows]

    def search(self, query: str, scope: str | None = None, k: int = 10,
               level: str | None = None, depth: int = 50) -> list[CatalogHit]:
        """Top-k nodes by `ranking.score`: the `depth` nearest nodes to the question's content
        words and the `depth` best by BM25 are the candidates; each is scored on both sides
        and by its prior (identifiers and constant columns rank lower)."""
        vec = self.memory.embedder.embed([content_words(query)])[0]
        where = ["TRUE"]
        params: dict[str, Any] = {"vec": vec, "text": query, "depth": depth, "k1": BM25_K1, "b": BM25_B}
        if scope:
            where.append("scope = %(scope)s")
            params["scope"] = scope
        if level:
            where.append("level = %(level)s")
            params["level"] = level
        cond = " AND ".join(where)
        rows = self.memory.with_connection(lambda conn: conn.execute(f"""
            WITH docs AS MATERIALIZED (
                SELECT scope, id, node, tsv, embedding FROM {SCHEMA}.catalog_nodes WHERE {cond}),
            q AS (SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', %(text)s))),
            stats AS (SELECT count(*)::float8 AS n, greatest(avg(length(tsv)), 1)::float8 AS avglen FROM docs),
            terms AS (
                SELECT d.scope, d.id, t.lexeme, coalesce(array_length(t.positions, 1), 1)::float8 AS tf,
                       length(d.tsv)::float8 AS len
                FROM docs d CROSS JOIN LATERAL unnest(d.tsv) t WHERE t.lexeme IN (SELECT lexeme FROM q)),
            df AS (SELECT lexeme, count(*)::float8 AS df FROM terms GROUP BY lexeme),
            bm25 AS (
                SELECT terms.scope, terms.id,
                       sum(ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5)) * tf * (%(k1)s + 1)
                           / (tf + %(k1)s * (1 - %(b)s + %(b)s * len / s.avglen))) AS bm25
                FROM terms JOIN df USING (lexeme) CROSS JOIN stats s
                GROUP BY terms.scope, terms.id ORDER BY bm25 DESC, terms.id LIMIT %(depth)s),
            dense AS (SELECT scope, id FROM docs ORDER BY embedding <=> %(vec)s, id LIMIT %(depth)s),
            cand AS (SELECT scope, id FROM dense UNION SELECT scope, id FROM bm25)
            SELECT d.scope, d.id, d.node, 1 - (d.embedding <=> %(vec)s) AS cosine, b.bm25
            FROM cand JOIN docs d USING (scope, id) LEFT JOIN bm25 b USING (scope, id)""",
            params).fetchall())
        wants_id, expected = asks_for_identifier(query), expected_types(query)
        nodes = {(sc, i): CatalogNode.model_validate(n) for sc, i, n, _, _ in rows}
        aligned = self._alignments(content_words(query), nodes)
        terms = {(sc, i): score(nodes[(sc, i)], float(cos), aligned[(sc, i)], None if bm is None else float(bm),
                                expected, wants_id)
                 for sc, i, _, cos, bm in rows}
        dense_rank = _ranks(terms, lambda t: t.dense)
        sparse_rank = _ranks({key: t for key, t in terms.items() if t.sparse > 0}, lambda t: t.sparse)
        best = sorted(terms, key=lambda key: (-terms[key].score, key))[:k]
        parents = self._parents(scope, [nodes[key] for key in best])
        return [CatalogHit(nodes[key], nodes[key].path(parents | {n.id: n for n in nodes.values()}),
                           terms[key].score, dense_rank.get(key), sparse_rank.get(key), terms[key])
                for key in best]

    def _alignments(self, content: str, nodes: dict[tuple[str, str], CatalogNode]) -> dict[tuple[str, str], float]:
        """`ranking.alignment` of the question's content words (and of their noun lemmas) with
        each candidate's name words (every distinct word embedded once, in one call), each
        question word weighted by its `rarity` among the candidate columns."""
        question = list(dict.fromkeys(content.lower().split()))
        own = {key: name_words(n) for key, n in nodes.items()}
        lex = lexicon()
        lemmas = [(lex.base_forms(w, "n") or (w,))[0] for w in question]
        vocab = list(dict.fromkeys([*question, *lemmas, *(w for ws in own.values() for w in ws)]))
        vecs = dict(zip(vocab, self.memory.embedder.embed(vocab), strict=True)) if vocab else {}
        q = np.array([vecs[w] for w in question]) if question else np.zeros((0, 1))
        lq = np.array([vecs[w] for w in lemmas]) if question else np.zeros((0, 1))
        best = {key: best_matches(q, np.array([vecs[w] for w in ws]), lexical_links(question, ws, lex.relation), lq)
                for key, ws in own.items() if ws}
        columns = [b for key, b in best.items() if nodes[key].level == "attribute"]
        weights = rarity(np.array(columns)) if columns and len(question) else None
        return {key: weighted_mean(best[key], weights) if key in best else 0.0 for key in own}

    def _parents(self, scope: str | None, hits: list[CatalogNode]) -> dict[str, CatalogNode]:
        ids = {h.parent for h in hits if h.parent}
        if not ids:
            return {}
        rows = self.memory.with_connection(lambda conn: conn.execute(
            f"SELECT node FROM {SCHEMA}.catalog_nodes WHERE id = ANY(%s)"
            + (" AND scope = %s" if scope else ""), [list(ids), *([scope] if scope else [])]).fetchall())
        parents = {n.id: n for n in (CatalogNode.model_validate(r[0]) for r in rows)}
        grand = {p.parent for p in parents.values() if p.parent and p.parent not in parents}
        if grand:
            rows = self.memory.with_connection(lambda conn: conn.execute(
                f"SELECT node FROM {SCHEMA}.catalog_nodes WHERE id = ANY(%s)", [list(grand)]).fetchall())
            parents.update({n.id: n for n in (CatalogNode.model_validate(r[0]) for r in rows)})
        return parents


def _ranks(terms: dict[tuple[str, str], Terms], key: Any) -> dict[tuple[str, str], int]:
    """1-based rank of each candidate on one side (ties broken by id)."""
    return {k: r for r, k in enumerate(sorted(terms, key=lambda x: (-key(terms[x]), x)), start=1)}
