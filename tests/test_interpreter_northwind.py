"""Northwind from its CSVs alone: the declared keys are recovered, nothing false is high."""

from __future__ import annotations

import json

import pytest

from tests.conftest import NORTHWIND

pytestmark = pytest.mark.skipif(not NORTHWIND.exists(), reason="shared/datasets/northwind not present")


@pytest.fixture(scope="module")
def northwind():
    from dia_assets.agents.interpreter import interpret

    return interpret(NORTHWIND / "raw"), json.loads((NORTHWIND / "truth.json").read_text())


def test_declared_primary_keys(northwind):
    interp, truth = northwind
    for name, table in truth["tables"].items():
        pk = interp.source(name).primary_key
        assert pk is not None and pk.columns == table["primary_key"], name


def test_declared_foreign_keys_and_no_false_ones(northwind):
    interp, truth = northwind
    declared = {(f["table"], tuple(f["columns"]), f["ref_table"], tuple(f["ref_columns"])) for f in truth["foreign_keys"]}
    high = {(f.from_.source, tuple(f.from_.columns), f.to.source, tuple(f.to.columns))
            for f in interp.foreign_keys if f.confidence >= 0.8}
    assert high == declared


def test_row_counts_and_types(northwind):
    interp, truth = northwind
    for name, table in truth["tables"].items():
        src = interp.source(name)
        assert src.row_count == table["row_count"], name
        for col in table["columns"]:
            ours = src.column(col["name"]).inferred_type
            if col["type"] in ("smallint", "integer"):
                assert ours in ("INTEGER", "BIGINT"), (name, col["name"], ours)
            elif col["type"] == "date":
                assert ours == "DATE", (name, col["name"])
            elif col["type"].startswith("character varying") and name == "territories":
                assert ours == "VARCHAR"  # leading zeros in territory ids survive
