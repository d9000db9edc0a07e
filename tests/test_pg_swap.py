"""PostgreSQL builds never block or confuse readers: a build loads into its own schemas, is
validated there, and is installed by a short swap transaction (schema_creator/postgres.py).
A reader querying in a loop during a build sees the old or the new complete table, never a
missing or half-loaded one; a refused build leaves the installed tables; strays are cleaned."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import psycopg
import pytest

from dia_assets.pipeline import run
from dia_assets.platform.warehouse.postgres import PostgresDatabase
from tests.memory_fixtures import fresh_database_url, pg_server  # noqa: F401  (fixture)


@pytest.fixture
def pg_url(pg_server) -> str:  # noqa: F811
    return fresh_database_url(pg_server, f"swap_{os.getpid()}")


def _write(path: Path, header: list[str], rows) -> None:
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def _export(data: Path, orders: int, orphans: int = 0) -> None:
    data.mkdir(exist_ok=True)
    _write(data / "customers.csv", ["customer_id", "name"], [[i, f"C{i}"] for i in range(1, 11)])
    _write(data / "orders.csv", ["order_id", "customer_id", "total"],
           [[o, (o % 10 + 1) if o > orphans else 99, o * 1.5] for o in range(1, orders + 1)])


def _leftovers(url: str) -> list[str]:
    with psycopg.connect(url) as con:
        return [r[0] for r in con.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'dia_build%' OR nspname LIKE 'dia_prev%'")]


def _count(url: str, table: str) -> int:
    with psycopg.connect(url) as con:
        return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


class Reader(threading.Thread):
    """Counts the installed refined and staging tables, one statement at a time, until stopped."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.stop = url, threading.Event()
        self.seen: list[tuple[int, int]] = []
        self.errors: list[str] = []

    def run(self) -> None:
        with psycopg.connect(self.url, autocommit=True) as con:
            while not self.stop.is_set():
                try:
                    refined = con.execute("SELECT count(*), count(total) FROM orders").fetchone()
                    staged = con.execute("SELECT count(*) FROM staging.orders").fetchone()[0]
                except psycopg.Error as err:  # a missing or locked-out table
                    self.errors.append(f"{type(err).__name__}: {err}")
                    continue
                self.seen.append((refined[0], staged))
                assert refined[0] == refined[1]  # never a row without its value


def test_reader_sees_old_or_new_complete_tables_during_a_build(tmp_path, pg_url):
    data, ws = tmp_path / "data", tmp_path / "ws"
    _export(data, orders=20_000)
    first = run(data, ws, warehouse=pg_url)
    assert first.report.accepted and first.report.installed
    with psycopg.connect(pg_url, autocommit=True) as con:
        con.execute("DROP ROLE IF EXISTS swap_analyst")  # roles are per server; its grants went with the old db
        con.execute("CREATE ROLE swap_analyst")
        con.execute("GRANT SELECT ON public.orders TO swap_analyst")
    _export(data, orders=25_000)
    mid_load: list[int] = []

    def read_mid_load(step: str) -> None:
        """Inside the load's copy: a reader is not waiting on it (with the old drop-and-recreate
        in one transaction, this read waited on the loader itself until lock_timeout)."""
        if step.startswith("postgres:"):
            with psycopg.connect(pg_url, autocommit=True) as con:
                con.execute("SET lock_timeout = '30s'")
                mid_load.append(con.execute("SELECT count(*) FROM orders").fetchone()[0])

    reader = Reader(pg_url)
    reader.start()
    try:
        second = run(data, ws, warehouse=pg_url, hook=read_mid_load)
        after = len(reader.seen)
        while len(reader.seen) < after + 3 and reader.is_alive():  # a few reads after the install
            reader.stop.wait(0.01)
    finally:
        reader.stop.set()
        reader.join(30)
    assert second.report.accepted and second.report.installed
    assert reader.errors == []
    assert mid_load and set(mid_load) == {20_000}
    # each statement sees one complete table, old or new (two statements may straddle the swap)
    assert {n for pair in reader.seen for n in pair} == {20_000, 25_000}, set(reader.seen)
    values = [n for pair in reader.seen for n in pair]
    assert values == sorted(values)  # once the new tables are in, never the old ones again
    assert reader.seen[0] == (20_000, 20_000) and reader.seen[-1] == (25_000, 25_000)
    assert _leftovers(pg_url) == []
    with psycopg.connect(pg_url) as con:  # privileges others had on a table carry over to its successor
        assert con.execute("SELECT has_table_privilege('swap_analyst', 'public.orders', 'SELECT')").fetchone()[0]
        assert con.execute("SELECT count(*) FROM information_schema.table_constraints WHERE constraint_type = "
                           "'FOREIGN KEY' AND table_schema = 'public'").fetchone()[0] >= 1
    gate = PostgresDatabase(pg_url)  # the agent's read-only role reads the installed tables
    try:
        assert gate.query("SELECT count(*) FROM orders").rows == [(25_000,)]
    finally:
        gate.close()


def test_refused_build_leaves_the_installed_tables_and_strays_are_dropped(tmp_path, pg_url):
    data, ws = tmp_path / "data", tmp_path / "ws"
    _export(data, orders=200)
    assert run(data, ws, warehouse=pg_url).report.installed
    with psycopg.connect(pg_url, autocommit=True) as con:  # what a build killed mid-load leaves
        con.execute("CREATE SCHEMA dia_build_dead")
        con.execute("CREATE TABLE dia_build_dead.orders (x int)")
        con.execute("CREATE SCHEMA dia_prev_dead_staging")
    _export(data, orders=300, orphans=3)  # a strong foreign key now has orphans
    refused = run(data, ws, warehouse=pg_url)
    assert not refused.report.accepted and not refused.report.installed
    assert "dropped" in (refused.report.rejected_build or "")
    assert _count(pg_url, "public.orders") == 200 and _count(pg_url, "staging.orders") == 200
    assert _leftovers(pg_url) == []
    anyway = run(data, ws, warehouse=pg_url, replace_anyway=True)
    assert not anyway.report.accepted and anyway.report.installed
    assert _count(pg_url, "public.orders") == 300


def _oid(url: str, name: str) -> int:
    with psycopg.connect(url) as con:
        return con.execute("SELECT %s::regclass::oid", (name,)).fetchone()[0]


def test_incremental_reload_swaps_only_the_changed_tables(tmp_path, pg_url):
    data, ws = tmp_path / "data", tmp_path / "ws"
    _export(data, orders=200)
    assert run(data, ws, warehouse=pg_url).report.installed
    kept = {n: _oid(pg_url, n) for n in ("public.customers", "staging.customers", "rejects.customers")}
    replaced = _oid(pg_url, "public.orders")
    _export(data, orders=260)  # only orders.csv changes
    again = run(data, ws, warehouse=pg_url, incremental=True)
    assert again.report.accepted and again.report.installed
    reload = again.report.reload
    assert reload.mode == "incremental" and reload.fallback is None, reload
    assert reload.reloaded == ["orders"] and reload.kept == ["customers"]
    assert {n: _oid(pg_url, n) for n in kept} == kept  # the very same tables, untouched
    assert _oid(pg_url, "public.orders") != replaced
    assert _count(pg_url, "public.orders") == 260 and _count(pg_url, "staging.orders") == 260
    assert _count(pg_url, "public.customers") == 10
    with psycopg.connect(pg_url) as con:  # the rebuilt table's key points at the kept parent
        refs = con.execute("SELECT confrelid::regclass::text FROM pg_constraint WHERE contype = 'f' "
                           "AND conrelid = 'public.orders'::regclass").fetchall()
    assert refs == [("customers",)]
    assert {r.table for r in again.report.row_counts} == {"customers", "orders"}
    assert _leftovers(pg_url) == []
    before = {n: _oid(pg_url, n) for n in ("public.customers", "public.orders", "staging.orders")}
    same = run(data, ws, warehouse=pg_url, incremental=True)  # nothing changed: nothing moves
    assert same.report.accepted and same.report.installed and same.report.reload.reloaded == []
    assert {n: _oid(pg_url, n) for n in before} == before
    # a refused incremental build leaves everything in place
    _export(data, orders=300, orphans=3)
    refused = run(data, ws, warehouse=pg_url, incremental=True)
    assert refused.report.reload.mode == "incremental" and not refused.report.installed
    assert _count(pg_url, "public.orders") == 260 and _leftovers(pg_url) == []


KILLER = """
import os, signal, sys
from dia_assets.pipeline import run
def hook(name):
    if name == sys.argv[4]:
        os.kill(os.getpid(), signal.SIGKILL)
run(sys.argv[1], sys.argv[2], warehouse=sys.argv[3], hook=hook)
"""


def test_a_build_killed_before_its_swap_leaves_the_installed_tables_and_a_stray_the_next_build_drops(
        tmp_path, pg_url):
    data, ws = tmp_path / "data", tmp_path / "ws"
    _export(data, orders=200)
    assert run(data, ws, warehouse=pg_url).report.installed
    _export(data, orders=250)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    done = subprocess.run([sys.executable, "-c", KILLER, str(data), str(ws), pg_url, "validate"], env=env,
                          cwd=Path(__file__).resolve().parents[1], capture_output=True, text=True, timeout=300)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert any(name.startswith("dia_build_") for name in _leftovers(pg_url))  # loaded, not yet swapped
    assert _count(pg_url, "public.orders") == 200
    again = run(data, ws, warehouse=pg_url)
    assert again.report.installed and _count(pg_url, "public.orders") == 250
    assert _leftovers(pg_url) == []


def test_a_table_whose_file_is_gone_is_retired_on_postgresql(tmp_path, pg_url):
    data, ws = tmp_path / "data", tmp_path / "ws"
    _export(data, orders=50)
    _write(data / "notes.csv", ["note_id", "text"], [[i, f"note {i}"] for i in range(1, 31)])
    assert run(data, ws, warehouse=pg_url).report.installed
    assert _count(pg_url, "public.notes") == 30
    (data / "notes.csv").unlink()
    again = run(data, ws, warehouse=pg_url, incremental=True)
    assert again.report.installed and [r.table for r in again.report.reload.retired] == ["notes"]
    assert again.report.reload.mode == "incremental" and sorted(again.report.reload.kept) == ["customers", "orders"]
    with psycopg.connect(pg_url) as con:
        assert [con.execute("SELECT to_regclass(%s)", (f"{s}.notes",)).fetchone()[0]
                for s in ("public", "staging", "rejects")] == [None, None, None]
    assert _leftovers(pg_url) == []
