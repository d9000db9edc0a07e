"""The catalog in the shared memory's PostgreSQL (`dia_memory.catalog_nodes`, migration 3):
replaced whole per scope on refresh, searched with dense (pgvector cosine) and sparse
(PostgreSQL full text over the query's keywords) retrieval fused by reciprocal rank."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np
from psycopg.types.json import Jsonb

from dia_assets.agents.memory.migrations import SCHEMA
from dia_assets.agents.memory.store import MemoryStore
from dia_assets.contracts.semantic_catalog import CatalogNode, SemanticCatalog

RRF_K = 60
_WORD = re.compile(r"[A-Za-z0-9]+")


@dataclass
class CatalogHit:
    node: CatalogNode
    path: str
    score: float
    dense_rank: int | None
    sparse_rank: int | None

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.node.id, "level": self.node.level, "path": self.path,
                "table": self.node.table, "column": self.node.column, "score": round(self.score, 5),
                "dense_rank": self.dense_rank, "sparse_rank": self.sparse_rank}


def keyword_query(text: str) -> str:
    """`to_tsquery` text OR-ing the query's words (sanitised: letters and digits only)."""
    words = [w.lower() for w in _WORD.findall(text) if len(w) > 1]
    return " | ".join(dict.fromkeys(words))


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
        """Top-k nodes by reciprocal-rank fusion of the dense and the sparse ranking."""
        vec = self.memory.embedder.embed([query])[0]
        where = ["TRUE"]
        params: list[Any] = []
        if scope:
            where.append("scope = %s")
            params.append(scope)
        if level:
            where.append("level = %s")
            params.append(level)
        cond = " AND ".join(where)
        keywords = keyword_query(query)

        def op(conn: Any) -> tuple[list[Any], list[Any]]:
            dense = conn.execute(
                f"SELECT scope, id, node FROM {SCHEMA}.catalog_nodes WHERE {cond} "
                "ORDER BY embedding <=> %s, id LIMIT %s", [*params, vec, depth]).fetchall()
            sparse = []
            if keywords:
                sparse = conn.execute(
                    f"SELECT scope, id, node FROM {SCHEMA}.catalog_nodes WHERE {cond} "
                    "AND tsv @@ to_tsquery('english', %s) "
                    "ORDER BY ts_rank_cd(tsv, to_tsquery('english', %s)) DESC, id LIMIT %s",
                    [*params, keywords, keywords, depth]).fetchall()
            return dense, sparse

        dense, sparse = self.memory.with_connection(op)
        nodes: dict[tuple[str, str], CatalogNode] = {}
        ranks: dict[tuple[str, str], list[int | None]] = {}
        for which, rows in ((0, dense), (1, sparse)):
            for rank, (sc, node_id, node) in enumerate(rows, start=1):
                key = (sc, node_id)
                nodes.setdefault(key, CatalogNode.model_validate(node))
                ranks.setdefault(key, [None, None])[which] = rank
        scored = sorted(((sum(1 / (RRF_K + r) for r in rk if r), key) for key, rk in ranks.items()),
                        key=lambda t: (-t[0], t[1]))[:k]
        parents = self._parents(scope, [nodes[key] for _, key in scored])
        return [CatalogHit(nodes[key], nodes[key].path(parents | {n.id: n for n in nodes.values()}),
                           score, ranks[key][0], ranks[key][1]) for score, key in scored]

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
