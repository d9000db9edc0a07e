"""Vector search for the embedding stage: PostgreSQL + pgvector (the shared memory's
server) or an in-process index. Both return inner-product scores, best first, so a
condition vector, a label vector and a centroid are searched the same way."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np


class VectorIndex(Protocol):
    name: str

    def add(self, collection: str, ids: Sequence[str], vectors: np.ndarray) -> None: ...

    def search(self, collection: str, query: np.ndarray, k: int | None = None) -> list[tuple[str, float]]: ...

    def drop(self, collection: str) -> None: ...


class InProcessIndex:
    """Exact inner-product search in numpy: tests, benches and runs without a store."""

    name = "numpy"

    def __init__(self) -> None:
        self._data: dict[str, tuple[list[str], np.ndarray]] = {}

    def add(self, collection: str, ids: Sequence[str], vectors: np.ndarray) -> None:
        old_ids, old = self._data.get(collection, ([], np.zeros((0, vectors.shape[1]), np.float32)))
        self._data[collection] = (old_ids + list(ids), np.vstack([old, vectors.astype(np.float32)]))

    def search(self, collection: str, query: np.ndarray, k: int | None = None) -> list[tuple[str, float]]:
        ids, matrix = self._data.get(collection, ([], np.zeros((0, len(query)), np.float32)))
        scores = matrix @ np.asarray(query, dtype=np.float32)
        order = np.argsort(-scores, kind="stable")[: k if k else None]
        return [(ids[i], float(scores[i])) for i in order]

    def drop(self, collection: str) -> None:
        self._data.pop(collection, None)


TABLE_DDL = """
CREATE TABLE IF NOT EXISTS semantic_vectors (
    collection text NOT NULL,
    item_id text NOT NULL,
    embedding vector NOT NULL,
    PRIMARY KEY (collection, item_id)
)"""


class PgVectorIndex:
    """`semantic_vectors` in the memory store's PostgreSQL. Searches are exact (`<#>` inner
    product over one collection); an operator's collection is its own input column, so
    the scan is over that column's rows only."""

    name = "pgvector"

    def __init__(self, conn: Any) -> None:
        from pgvector.psycopg import register_vector

        self.conn = conn
        with conn.cursor() as cur:
            cur.execute("CREATE EXTENSION IF NOT EXISTS vector")
        register_vector(conn)
        with conn.cursor() as cur:
            cur.execute(TABLE_DDL)
        conn.commit()

    def add(self, collection: str, ids: Sequence[str], vectors: np.ndarray) -> None:
        with self.conn.cursor() as cur, cur.copy(
            "COPY semantic_vectors (collection, item_id, embedding) FROM STDIN WITH (FORMAT BINARY)"
        ) as copy:
            copy.set_types(["text", "text", "vector"])
            for item_id, row in zip(ids, vectors, strict=True):
                copy.write_row((collection, str(item_id), np.asarray(row, dtype=np.float32)))
        self.conn.commit()

    def search(self, collection: str, query: np.ndarray, k: int | None = None) -> list[tuple[str, float]]:
        sql = ("SELECT item_id, -(embedding <#> %s) AS score FROM semantic_vectors "
               "WHERE collection = %s ORDER BY embedding <#> %s, item_id")
        vec = np.asarray(query, dtype=np.float32)
        params: list[Any] = [vec, collection, vec]
        if k:
            sql += " LIMIT %s"
            params.append(k)
        with self.conn.cursor() as cur:
            cur.execute(sql, params)
            return [(str(i), float(s)) for i, s in cur.fetchall()]

    def drop(self, collection: str) -> None:
        with self.conn.cursor() as cur:
            cur.execute("DELETE FROM semantic_vectors WHERE collection = %s", (collection,))
        self.conn.commit()
