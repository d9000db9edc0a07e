"""Fixtures for the memory tests: one embedded PostgreSQL per test process, a fresh
database per test, DuckDB files to probe, and a cheap deterministic embedder.

Import the fixtures you use into a test module (`from tests.memory_fixtures import ...`).
The server lives in a pytest tmp folder: as root, pgserver widens permissions on the
data folder's parents, which is harmless there.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import duckdb
import numpy as np
import psycopg
import pytest
from psycopg.conninfo import make_conninfo

from dia_assets.platform.memory.server import EmbeddedServer
from dia_assets.platform.memory.store import MemoryStore

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
ROOT = Path(__file__).resolve().parents[1]

_SERVER: dict[str, Any] = {}
_DB_COUNTER = itertools.count()


class HashEmbedder:
    """Deterministic bag-of-words vectors: fast, and different from WordLlama by name."""

    def __init__(self, dim: int = 32, name: str | None = None) -> None:
        self.dim = dim
        self.name = name or f"test/hash-{dim}"

    def embed(self, texts: Any) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in str(text).lower().split():
                out[row, int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms


@pytest.fixture(scope="session")
def pg_server(request: pytest.FixtureRequest) -> dict[str, Any]:
    """The embedded server shared by every memory test in this process.

    Its folder is a private mkdtemp under /tmp, not pytest's basetemp: pytest resets
    /tmp/pytest-of-<user> to mode 0700 whenever any pytest starts, which would lock the
    `pgserver` system user out of its own data folder mid-run.
    """
    if not _SERVER:
        base = Path(tempfile.mkdtemp(prefix="dia-memory-test-"))
        server = EmbeddedServer(base / "pgdata")
        _SERVER.update(pgdata=base / "pgdata", server=server, uri=server.uri())
        with psycopg.connect(server.uri(), autocommit=True) as conn:
            # throwaway data: skip fsync so creating a database per test and the final
            # shutdown checkpoint stay fast
            conn.execute("ALTER SYSTEM SET fsync = off")
            conn.execute("ALTER SYSTEM SET synchronous_commit = off")
            conn.execute("SELECT pg_reload_conf()")

        def _stop() -> None:
            server.stop()
            shutil.rmtree(base, ignore_errors=True)

        request.addfinalizer(_stop)
    return _SERVER


def fresh_database_url(pg_server: dict[str, Any], name: str) -> str:
    """A postgresql:// URL of an empty database `name` on the shared server (recreated)."""
    uri = pg_server["server"].uri()
    with psycopg.connect(uri, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return urlunsplit(urlsplit(uri)._replace(path=f"/{name}"))


@pytest.fixture
def db_url(pg_server: dict[str, Any]) -> Iterator[str]:
    """A fresh, empty database on the shared server; returns its conninfo.

    Dropped afterwards: its buffers are then discarded instead of written by the
    shutdown checkpoint, which keeps stopping the server fast.
    """
    name = f"t{os.getpid()}_{next(_DB_COUNTER)}"
    with psycopg.connect(pg_server["server"].uri(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield make_conninfo(pg_server["server"].uri(), dbname=name)
    with psycopg.connect(pg_server["server"].uri(), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def store(db_url: str) -> Iterator[MemoryStore]:
    """A store on a fresh database with the real (offline) WordLlama embeddings."""
    s = MemoryStore.open(url=db_url)
    yield s
    s.close()


@pytest.fixture
def hash_store(db_url: str) -> Iterator[MemoryStore]:
    """A store with the cheap test embedder, for tests about bookkeeping, not semantics."""
    s = MemoryStore.open(url=db_url, embedder=HashEmbedder())
    yield s
    s.close()


def make_duckdb(path: Path, fanout: bool = True) -> Path:
    """A schools/scores database; with `fanout`, one school has many score rows."""
    con = duckdb.connect(str(path))
    con.execute("CREATE OR REPLACE TABLE schools (cds_code VARCHAR PRIMARY KEY, county VARCHAR)")
    con.execute("CREATE OR REPLACE TABLE scores (cds_code VARCHAR, year INTEGER, score DOUBLE)")
    con.execute("INSERT INTO schools VALUES ('A', 'Alameda'), ('B', 'Fresno')")
    rows = [("A", 2000 + i, 1.0 * i) for i in range(5)] if fanout else [("A", 2000, 1.0)]
    con.executemany("INSERT INTO scores VALUES (?, ?, ?)", [*rows, ("B", 2000, 2.0)])
    con.close()
    return path


def make_other_duckdb(path: Path) -> Path:
    """A second database with another schema (another fingerprint) and the same fan-out."""
    con = duckdb.connect(str(path))
    con.execute("CREATE OR REPLACE TABLE patients (id INTEGER PRIMARY KEY, born DATE)")
    con.execute("CREATE OR REPLACE TABLE scores (cds_code VARCHAR, year INTEGER, score DOUBLE)")
    con.executemany("INSERT INTO scores VALUES (?, ?, ?)", [("P", 2000 + i, 1.0) for i in range(3)])
    con.close()
    return path


def run_python(
    code: str,
    env: dict[str, str] | None = None,
    timeout: int = 120,
    prefix: list[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run a Python snippet in a fresh interpreter at the project root."""
    full_env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **(env or {})}
    return subprocess.run(
        [*(prefix or []), sys.executable, "-c", code],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
