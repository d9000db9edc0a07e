"""Helpers for the Schema Creator tests: small interpretations built by hand, builds
into a temporary workspace, and tampering with a built warehouse."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

import duckdb

from dia_assets.agents.schema_creator.overrides import parse_overrides
from dia_assets.agents.schema_creator.plan import plan_manifest
from dia_assets.contracts.interpretation import (
    Column,
    Interpretation,
    KeyCandidate,
    ParseInfo,
    Source,
    ValueFormat,
)
from dia_assets.contracts.manifest import Manifest
from dia_assets.pipeline import BuildResult, run
from dia_assets.platform.tables.target import Target

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
NORTHWIND = ROOT / "tests" / "fixtures" / "datasets" / "northwind"  # vendored whole


def csv_source(
    name: str, path: Path, columns: dict[str, str], rows: int, *, pk: list[str] | None = None,
    formats: dict[str, ValueFormat] | None = None, duplicates: int = 0, bad_rows: int = 0,
) -> Source:
    """A hand-made interpretation of a CSV file: `columns` maps name -> inferred type."""
    formats = formats or {}
    return Source(
        name=name, path=path.name, format="csv",
        content_hash=hashlib.sha256(path.read_bytes()).hexdigest(), size_bytes=path.stat().st_size,
        row_count=rows, duplicate_rows=duplicates,
        parse=ParseInfo(delimiter=",", quote='"', encoding="utf-8", bad_rows=bad_rows),
        columns=[
            Column(name=c, original_name=c, physical_type="VARCHAR", inferred_type=t,
                   value_format=formats.get(c, ValueFormat()))
            for c, t in columns.items()
        ],
        primary_key=KeyCandidate(columns=pk, confidence=1.0, reason="test") if pk else None,
    )


def interpretation(data_dir: Path, *sources: Source, foreign_keys: list | None = None) -> Interpretation:
    return Interpretation(data_dir=str(data_dir), generated_at="2026-01-01T00:00:00+00:00",
                          sources=list(sources), foreign_keys=foreign_keys or [])


def manifest_for(interp: Interpretation, overrides: str = "") -> Manifest:
    return plan_manifest(interp, parse_overrides(overrides))


def build_ws(tmp: Path, interp: Interpretation, overrides: str | None = None,
             warehouse: str | None = None) -> BuildResult:
    ws = tmp / "ws"
    if overrides is not None:
        path = ws / "review" / "interpretation_overrides.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(overrides)
    return run(interp.data_dir, ws, warehouse=warehouse, interpretation=interp)


def tamper(warehouse: str | Path, sql: str) -> None:
    con = duckdb.connect(str(warehouse))
    try:
        con.execute(sql).fetchall()
    finally:
        con.close()


def target(warehouse: str | Path) -> Target:
    return Target(str(warehouse))


@lru_cache(maxsize=1)
def northwind_interpretation() -> Interpretation:
    from dia_assets.agents.interpreter import interpret

    return interpret(NORTHWIND / "raw")
