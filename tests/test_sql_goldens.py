"""Golden SQL: the DDL, load and validation SQL that building `examples/data` writes, per
warehouse dialect, against files under tests/fixtures/sql/examples/, byte for byte.

Until now generated SQL was checked only by "it parses" and a statement count; a change in
quoting, types, casts, key handling or the test queries now shows up as a diff in review. A
deliberate change regenerates the files and says why in its commit:

    DIA_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_sql_goldens.py

ddl.<dialect>.sql and load.<dialect>.sql are the workspace's schema/ddl.sql and schema/load.sql
as the build wrote them (PostgreSQL's load SQL is DuckDB SQL: the loader stages in DuckDB and
copies, schema_creator/postgres.py). validation.<dialect>.sql lists the report's test queries,
each with its name and expected value. A missing golden fails.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import sqlglot

from dia_assets.contracts.report import ValidationReport
from dia_assets.pipeline import BuildResult, run
from dia_assets.platform.warehouse import REGISTRY
from tests.conftest import EXAMPLES
from tests.memory_fixtures import fresh_database_url, pg_server  # noqa: F401  (fixture)
from tests.spark_fixtures import require_spark, spark_target

GOLDENS = Path(__file__).parent / "fixtures" / "sql" / "examples"
# every engine the Schema Creator builds has goldens (tests/platform/warehouse/test_registry.py);
# Spark's need pyspark (make test-spark)
DIALECTS = tuple(name for name, d in REGISTRY.items() if d.schema_creator_builds)
PARAMS = [pytest.param(name, marks=pytest.mark.spark) if name == "spark" else name for name in DIALECTS]
KINDS = ("ddl", "load", "validation")


def validation_sql(report: ValidationReport) -> str:
    """The report's test queries as one SQL file: a comment with name and expected value, then
    the statement (the actual values are the warehouse's, not the generator's)."""
    out = [f"-- validation test queries of the examples/data build ({report.dialect}); "
           "refresh: DIA_UPDATE_SNAPSHOTS=1"]
    for query in report.test_queries:
        out.append(f"\n-- {query.name} (expected {query.expected})\n{query.sql};")
    return "\n".join(out) + "\n"


def _build(tmp: Path, warehouse: str | None, interpretation) -> BuildResult:  # noqa: ANN001
    data = EXAMPLES / "data"
    result = run(data, tmp / "ws", warehouse=warehouse, interpretation=interpretation,
                 overrides_seed=data / "overrides.yaml")
    assert result.report.accepted, {k: a.summary for k, a in result.report.axes.items()}
    return result


class Generated(dict):
    """{(kind, dialect): text}, from one build of the example data per dialect, made when first
    asked for."""

    def __init__(self, make) -> None:  # noqa: ANN001
        super().__init__()
        self.make = make

    def __missing__(self, key: tuple[str, str]) -> str:
        self.make(key[1], self)
        return self[key]


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory, pg_server, example_interpretation) -> dict:  # noqa: ANN001, F811
    def make(dialect: str, out: dict) -> None:
        if dialect == "spark":
            require_spark()
        # a file engine builds in the workspace; a server engine names its test server here
        url = None if REGISTRY[dialect].file_based else {
            "postgres": lambda: fresh_database_url(pg_server, f"sql_goldens_{os.getpid()}"),
            "spark": lambda: spark_target(tmp_path_factory.mktemp("spark-root")),
        }[dialect]()
        result = _build(tmp_path_factory.mktemp(dialect), url, example_interpretation)
        assert result.report.dialect == dialect
        out["ddl", dialect] = result.paths["ddl"].read_text(encoding="utf-8")
        out["load", dialect] = result.paths["load"].read_text(encoding="utf-8")
        out["validation", dialect] = validation_sql(result.report)

    return Generated(make)


@pytest.mark.parametrize("dialect", PARAMS)
@pytest.mark.parametrize("kind", KINDS)
def test_generated_sql_matches_golden(generated: dict, kind: str, dialect: str) -> None:
    got = generated[kind, dialect]
    path = GOLDENS / f"{kind}.{dialect}.sql"
    if os.environ.get("DIA_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(got.encode("utf-8"))
    assert path.exists(), f"no golden {path.name}: write it with DIA_UPDATE_SNAPSHOTS=1 and review it"
    want = path.read_bytes().decode("utf-8")
    if got != want:
        at = next(i for i, (a, b) in enumerate(zip(got + "\0", want + "\0", strict=False)) if a != b)
        pytest.fail(f"{path.name} differs from the generated SQL at character {at}:\n"
                    f"  golden:    {want[max(0, at - 80):at + 80]!r}\n  generated: {got[max(0, at - 80):at + 80]!r}\n"
                    "regenerate with DIA_UPDATE_SNAPSHOTS=1 if the change is intended")


@pytest.mark.parametrize("dialect", PARAMS)
def test_goldens_cover_every_table_and_parse_in_their_dialect(generated: dict, dialect: str) -> None:
    """The goldens are not vacuous: each dialect's DDL creates the three layers of every
    planned table and parses in that dialect; the load and validation SQL parse as DuckDB
    and PostgreSQL SQL respectively (the dialect each runs in)."""
    ddl = generated["ddl", dialect]
    creates = [s for s in sqlglot.parse(ddl, read=dialect) if s is not None and s.key == "create"]
    tables = {s.this.this.name for s in creates if s.args.get("kind") == "TABLE"}
    schemas = sum(s.args.get("kind") == "SCHEMA" for s in creates)
    assert schemas in (2, 3) and len(creates) == schemas + 3 * len(tables) and len(tables) >= 5, (
        dialect, sorted(tables))
    assert all(f"\n-- {t} <- " in generated["load", dialect] for t in tables)
    assert [s for s in sqlglot.parse(generated["load", dialect], read="duckdb") if s is not None]
    queries = generated["validation", dialect].count("\n-- ")
    assert queries >= len(tables) and all(f"-- count {t} (expected " in generated["validation", dialect]
                                           for t in tables)
    if dialect == "postgres":
        assert "FOREIGN KEY" in generated["ddl", "postgres"]
    if dialect == "duckdb":
        assert "PRIMARY KEY" in generated["ddl", "duckdb"]
