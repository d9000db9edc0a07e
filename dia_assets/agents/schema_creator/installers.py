"""The engines the Schema Creator fills from its DuckDB build (`Dialect.loads_from_duckdb`): for
each, the module that copies the build in, validates it where readers cannot see it yet and
installs it in one short step, the DDL script the plan writes, and whether an incremental
reload can install only the changed tables. Keyed by dialect name: these are the Schema
Creator's own modules per engine (as sqlglot keeps a generator per dialect)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dia_assets.contracts.manifest import Manifest
from dia_assets.platform.warehouse import Dialect


@dataclass(frozen=True)
class Installer:
    load: Callable[..., Any]  # (manifest, data_dir, target, hook, check, replace_anyway, keep=, retire=)
    ddl_script: Callable[[Manifest], str]
    incremental: bool


def installer_for(dialect: Dialect) -> Installer:
    if dialect.name == "spark":
        from dia_assets.agents.schema_creator import spark

        return Installer(spark.load_spark, spark.ddl_script, incremental=False)
    if dialect.name == "postgres":
        from dia_assets.agents.schema_creator import postgres

        return Installer(postgres.load_postgres, postgres.ddl_script, incremental=True)
    raise ValueError(f"{dialect.title or dialect.name}: the Schema Creator has no installer for it")
