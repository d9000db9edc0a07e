"""The interpretation of every bundled and development dataset, against a golden snapshot.

The development datasets are the small copies in tests/fixtures/datasets/ (Northwind, hr and
classicmodels whole, pagila and tpch extracts; see its README), so every checkout runs them all.

The snapshot holds the fields that decide what gets built: row counts, types, semantic
types, formats, null/blank/distinct counts where exact, keys and foreign keys with their
confidence, and quality issue kinds with counts; and the sample-based fields that drift
reads (deciles feed PSI), patterns and examples, which moved from run to run until the
interpreter became deterministic (tests/test_deterministic.py). A missing snapshot fails. Speed work must not move any of them;
a deliberate change regenerates the file and says why in its commit:

    DIA_UPDATE_SNAPSHOTS=1 python -m pytest tests/test_interpretation_snapshot.py
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import DATASETS, EXAMPLES

SNAPSHOTS = Path(__file__).parent / "snapshots" / "interpretations"


def _folders() -> dict[str, Path]:
    out = {"examples": EXAMPLES / "data"}
    for ds in sorted(DATASETS.iterdir()):
        if (ds / "raw").is_dir():
            out[ds.name] = ds / "raw"
    return out


def _r(x: float | None) -> float | None:
    return None if x is None else round(float(x), 4)


def summary(interp) -> dict:  # noqa: ANN001
    """The decision-relevant fields of an interpretation, in a stable order."""
    sources = []
    for s in interp.sources:
        sources.append({
            "name": s.name, "path": s.path, "format": s.format, "rows": s.row_count,
            "duplicate_rows": s.duplicate_rows,
            "parse": {"ok": s.parse.ok, "delimiter": s.parse.delimiter, "header": s.parse.header,
                      "bad_rows": s.parse.bad_rows, "rewritten": s.parse.rewritten,
                      "encoding": s.parse.encoding},
            "primary_key": None if s.primary_key is None else
            [s.primary_key.columns, _r(s.primary_key.confidence), s.primary_key.source],
            "candidate_keys": [[k.columns, _r(k.confidence)] for k in s.candidate_keys],
            "columns": [{
                "name": c.name, "physical": c.physical_type, "semantic": c.semantic_type,
                "type": c.inferred_type, "format": c.value_format.model_dump(),
                "nulls": c.null_count, "blanks": c.blank_count, "tokens": c.null_token_count,
                "distinct": None if c.distinct_approximate else c.distinct_count,
                "unique": c.unique, "unparseable": c.unparseable_count,
                "min": c.min, "max": c.max, "max_length": c.max_length,
                "top_values": [list(t) for t in c.top_values],
                "deciles": c.quantiles, "patterns": [list(p) for p in c.patterns], "examples": c.examples,
            } for c in s.columns],
        })
    fks = sorted(
        [f"{fk.from_.source}({','.join(fk.from_.columns)}) -> {fk.to.source}({','.join(fk.to.columns)})",
         _r(fk.coverage), fk.orphan_count, _r(fk.confidence), fk.strength, fk.source]
        for fk in interp.foreign_keys
    )
    issues = sorted(
        [i.source, i.column or "", i.kind, i.severity, i.count] for i in interp.quality_issues
    )
    return {"sources": sources, "foreign_keys": fks, "quality_issues": issues,
            "join_paths": sorted([p.sources, p.joins] for p in interp.join_paths)}


@pytest.mark.parametrize("name", list(_folders()))
def test_interpretation_unchanged(name: str) -> None:
    from dia_assets.agents.interpreter import interpret

    got = summary(interpret(_folders()[name]))
    path = SNAPSHOTS / f"{name}.json"
    if os.environ.get("DIA_UPDATE_SNAPSHOTS") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=1, sort_keys=True, default=str) + "\n", encoding="utf-8")
    assert path.exists(), f"no snapshot {path.name}: write it with DIA_UPDATE_SNAPSHOTS=1 and review it"
    want = json.loads(path.read_text(encoding="utf-8"))
    got = json.loads(json.dumps(got, sort_keys=True, default=str))
    for i, (g, w) in enumerate(zip(got["sources"], want["sources"], strict=False)):
        assert g == w, f"source {i} ({w['name']}) changed"
    for key in ("sources", "foreign_keys", "quality_issues", "join_paths"):
        assert got[key] == want[key], key
