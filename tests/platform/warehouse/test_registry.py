"""Every registered engine is complete (docs/development.md, "Warehouse engines"): adding one is
its module in dia_assets/platform/warehouse/, its gate allow-list, its conformance subclass here
and, when the Schema Creator builds it, its golden SQL. A registered `Dialect` missing any of
them fails here, by name, instead of failing later in the gate or a prompt."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest
from sqlglot.dialects.dialect import Dialect as SqlglotDialect

import tests.platform.warehouse as suites
from dia_assets.platform.sql.allowlist import LISTS
from dia_assets.platform.warehouse import REGISTRY, Dialect, connect, target_dialect
from dia_assets.platform.warehouse import base as warehouse_base
from dia_assets.platform.warehouse.duckdb import DUCKDB
from tests.platform.warehouse.conformance import BaseWarehouseSuite

GOLDENS = Path(__file__).parents[2] / "fixtures" / "sql" / "examples"


def conformance_suites() -> dict[str, type[BaseWarehouseSuite]]:
    """{dialect: its conformance subclass} over every test module of this folder."""
    found: dict[str, type[BaseWarehouseSuite]] = {}
    for info in pkgutil.iter_modules(suites.__path__):
        module = importlib.import_module(f"{suites.__name__}.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, BaseWarehouseSuite) and value.dialect:
                found[value.dialect] = value
    return found


def missing(dialect: Dialect) -> list[str]:
    """What a registered engine lacks, in words."""
    out = []
    if dialect.name not in LISTS:
        out.append(f"no allow-list dia_assets/platform/sql/allowlist/{dialect.name}.py")
    if dialect.name not in conformance_suites():
        out.append(f"no conformance suite tests/platform/warehouse/test_{dialect.name}.py")
    if not dialect.title or not dialect.prompt_notes:
        out.append("no title or prompt_notes for the query agent's prompt")
    try:
        SqlglotDialect.get_or_raise(dialect.name)
    except ValueError:
        out.append("its name is not a sqlglot dialect (register() aliases it)")
    if dialect.schema_creator_builds:
        if dialect.owner is None:
            out.append("the Schema Creator builds it but it has no owner connection")
        out += [f"no golden {kind}.{dialect.name}.sql" for kind in ("ddl", "load", "validation")
                if not (GOLDENS / f"{kind}.{dialect.name}.sql").is_file()]
    return out


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registered_engine_is_complete(name: str) -> None:
    assert missing(REGISTRY[name]) == []


def test_an_engine_registered_alone_is_reported_incomplete(tmp_path: Path) -> None:
    """The check is not vacuous: a Dialect registered without its allow-list, suite, prompt
    words and goldens is reported for each, and register() made its name a sqlglot dialect
    (the gate parses with it), reading DuckDB's SQL."""
    toy = Dialect(name="dia_toy_engine", sqlglot="duckdb", claims=lambda t: t.startswith("toy:///"),
                  opener=lambda target, read_only=True: DUCKDB.open(target.removeprefix("toy:///"), read_only),
                  owner=None, local_path=lambda t: Path(t.removeprefix("toy:///")))
    before = (dict(REGISTRY), list(warehouse_base._ORDER))
    try:
        warehouse_base.register(toy)
        problems = missing(toy)
        assert [p.split(" ")[0] + " " + p.split(" ")[1] for p in problems] == [
            "no allow-list", "no conformance", "no title", "the Schema", "no golden", "no golden", "no golden"]
        assert SqlglotDialect.get_or_raise("dia_toy_engine").parse("SELECT 1 FROM range(3)")
        import duckdb

        duckdb.connect(str(tmp_path / "t.duckdb")).close()
        assert target_dialect(f"toy:///{tmp_path}/t.duckdb") is toy
        db = connect(f"toy:///{tmp_path}/t.duckdb")
        try:
            assert db.query("SELECT 42").rows == [(42,)]
        finally:
            db.close()
        # evaluation and memory probes open it through the registry, as itself (its file's
        # DuckDB header does not turn it back into DuckDB), with no line naming it
        from dia_assets.agents.evaluation.databases import open_database
        from dia_assets.platform.memory.verify import GatedProbeRunner

        with open_database(f"toy:///{tmp_path}/t.duckdb") as scored:
            assert scored.dialect == "dia_toy_engine" and scored.query("SELECT 7").rows == [(7,)]
        with GatedProbeRunner.open(f"toy:///{tmp_path}/t.duckdb") as probe:
            assert probe("SELECT 1 = 1") == [(True,)]
    finally:
        REGISTRY.clear()
        REGISTRY.update(before[0])
        warehouse_base._ORDER[:] = before[1]
