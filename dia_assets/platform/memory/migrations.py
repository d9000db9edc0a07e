"""Versioned, idempotent schema migrations for the memory store (schema `dia_memory`).

Every process runs `migrate()` on connect. It takes a transaction-scoped advisory lock, so
concurrent processes apply each migration exactly once; each statement is also written to
be safe to repeat. The embedding model and dimension are recorded in `dia_memory.meta` on
first use and checked on every later connect: vectors from different models never mix.
"""

from __future__ import annotations

import psycopg

SCHEMA = "dia_memory"
BULK_LOCK = 0x62756C6B  # "bulk": advisory lock held while a bulk load has the search indexes dropped
_MIGRATION_LOCK = 0x6D656D6F7279  # "memory"; any constant shared by all DIA processes

_BOOTSTRAP = [
    "CREATE EXTENSION IF NOT EXISTS vector",
    f"CREATE SCHEMA IF NOT EXISTS {SCHEMA}",
    f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.migrations (
        version int PRIMARY KEY, name text NOT NULL,
        applied_at timestamptz NOT NULL DEFAULT now())""",
    f"CREATE TABLE IF NOT EXISTS {SCHEMA}.meta (key text PRIMARY KEY, value text NOT NULL)",
]

# Search indexes are named so bulk loads can drop them, load, and build them after.
SEARCH_INDEXES: dict[str, str] = {
    "items_embedding_hnsw": f"""CREATE INDEX IF NOT EXISTS items_embedding_hnsw
        ON {SCHEMA}.items USING hnsw (embedding vector_cosine_ops)
        WITH (m = 16, ef_construction = 64)""",
    "items_tsv_gin": f"CREATE INDEX IF NOT EXISTS items_tsv_gin ON {SCHEMA}.items USING gin (tsv)",
}

# (version, name, statements); `{dim}` is the store's embedding dimension.
MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (
        1,
        "items, version graph and events",
        [
            f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.items (
                id bigserial PRIMARY KEY,
                tier text NOT NULL CHECK (tier IN ('example', 'session', 'cross_session')),
                kind text NOT NULL,
                title text NOT NULL,
                body text NOT NULL,
                probe_sql text,
                question text,
                evidence jsonb NOT NULL DEFAULT '[]',
                notes jsonb NOT NULL DEFAULT '{{}}',
                scope text NOT NULL DEFAULT '',
                content_hash text NOT NULL,
                embedding vector({{dim}}) NOT NULL,
                tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig,
                    title || ' ' || coalesce(question, '') || ' ' || body)) STORED,
                importance real NOT NULL DEFAULT 0.5,
                confidence real NOT NULL DEFAULT 0.5,
                use_count int NOT NULL DEFAULT 0,
                success_count int NOT NULL DEFAULT 0,
                verify_pass_count int NOT NULL DEFAULT 0,
                verify_fail_count int NOT NULL DEFAULT 0,
                status text NOT NULL DEFAULT 'active'
                    CHECK (status IN ('active', 'superseded', 'archived')),
                created_at timestamptz NOT NULL DEFAULT now(),
                updated_at timestamptz NOT NULL DEFAULT now(),
                last_used_at timestamptz,
                last_verified_at timestamptz)""",
            f"""CREATE UNIQUE INDEX IF NOT EXISTS items_active_content
                ON {SCHEMA}.items (tier, kind, scope, content_hash) WHERE status = 'active'""",
            f"""CREATE INDEX IF NOT EXISTS items_filter
                ON {SCHEMA}.items (status, tier, kind, scope)""",
            f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.edges (
                src_id bigint NOT NULL REFERENCES {SCHEMA}.items (id) ON DELETE CASCADE,
                dst_id bigint NOT NULL REFERENCES {SCHEMA}.items (id) ON DELETE CASCADE,
                relation text NOT NULL,
                detail jsonb NOT NULL DEFAULT '{{}}',
                created_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (src_id, dst_id, relation))""",
            f"CREATE INDEX IF NOT EXISTS edges_dst ON {SCHEMA}.edges (dst_id)",
            f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.events (
                id bigserial PRIMARY KEY,
                item_id bigint REFERENCES {SCHEMA}.items (id) ON DELETE CASCADE,
                event text NOT NULL,
                scope text,
                detail jsonb NOT NULL DEFAULT '{{}}',
                at timestamptz NOT NULL DEFAULT now())""",
            f"CREATE INDEX IF NOT EXISTS events_item ON {SCHEMA}.events (item_id, event)",
        ],
    ),
    (2, "hnsw (cosine) and full-text search indexes", list(SEARCH_INDEXES.values())),
    (
        3,
        "semantic catalog nodes (Data Agents III-A)",
        [
            f"""CREATE TABLE IF NOT EXISTS {SCHEMA}.catalog_nodes (
                scope text NOT NULL,
                id text NOT NULL,
                level text NOT NULL CHECK (level IN ('domain', 'entity', 'attribute')),
                label text NOT NULL,
                parent text,
                table_name text,
                column_name text,
                description text NOT NULL,
                node jsonb NOT NULL,
                embedding vector({{dim}}) NOT NULL,
                tsv tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig,
                    label || ' ' || coalesce(table_name, '') || ' ' || coalesce(column_name, '')
                    || ' ' || description)) STORED,
                updated_at timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (scope, id))""",
            f"""CREATE INDEX IF NOT EXISTS catalog_nodes_tsv
                ON {SCHEMA}.catalog_nodes USING gin (tsv)""",
        ],
    ),
]

LATEST = MIGRATIONS[-1][0]


class EmbeddingMismatch(RuntimeError):
    """The store holds vectors from another embedding model or dimension."""


def migrate(conn: psycopg.Connection, model: str, dim: int) -> list[int]:
    """Apply pending migrations and bind (or check) the embedding model; returns versions run."""
    applied: list[int] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        for statement in _BOOTSTRAP:
            conn.execute(statement)
        meta = dict(conn.execute(f"SELECT key, value FROM {SCHEMA}.meta").fetchall())
        if "embedding_model" in meta:
            if meta["embedding_model"] != model or int(meta["embedding_dim"]) != dim:
                raise EmbeddingMismatch(
                    f"this memory store holds {meta['embedding_dim']}-d vectors from "
                    f"{meta['embedding_model']!r}; refusing {dim}-d vectors from {model!r}. "
                    "Use the same DIA_EMBEDDING_MODEL, or another store (DIA_MEMORY_URL or "
                    "DIA_WORKSPACE) for the new model."
                )
        else:
            conn.execute(
                f"INSERT INTO {SCHEMA}.meta (key, value) VALUES "
                "('embedding_model', %s), ('embedding_dim', %s)",
                (model, str(dim)),
            )
        done = {row[0] for row in conn.execute(f"SELECT version FROM {SCHEMA}.migrations")}
        for version, name, statements in MIGRATIONS:
            if version in done:
                continue
            for statement in statements:
                conn.execute(statement.replace("{dim}", str(int(dim))))
            conn.execute(
                f"INSERT INTO {SCHEMA}.migrations (version, name) VALUES (%s, %s)", (version, name)
            )
            applied.append(version)
    return applied


def missing_search_indexes(conn: psycopg.Connection) -> list[str]:
    rows = conn.execute(
        "SELECT indexname FROM pg_indexes WHERE schemaname = %s AND indexname = ANY(%s)",
        (SCHEMA, list(SEARCH_INDEXES)),
    ).fetchall()
    present = {r[0] for r in rows}
    return [name for name in SEARCH_INDEXES if name not in present]


def drop_search_indexes(conn: psycopg.Connection) -> None:
    """For bulk loads: inserting into an HNSW index costs ~5 ms a row; building after is cheaper."""
    with conn.transaction():
        for name in SEARCH_INDEXES:
            conn.execute(f"DROP INDEX IF EXISTS {SCHEMA}.{name}")


def build_search_indexes(
    conn: psycopg.Connection, maintenance_work_mem: str = "1GB", parallel_workers: int = 2
) -> list[str]:
    """(Re)create missing search indexes; also repairs a bulk load that died half-way."""
    missing = missing_search_indexes(conn)
    if not missing:
        return []
    with conn.transaction():
        conn.execute("SELECT set_config('maintenance_work_mem', %s, true)", (maintenance_work_mem,))
        conn.execute(
            "SELECT set_config('max_parallel_maintenance_workers', %s, true)",
            (str(int(parallel_workers)),),
        )
        for name in missing:
            conn.execute(SEARCH_INDEXES[name])
    return missing
