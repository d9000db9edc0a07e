"""An unchanged file keeps its profile and keys and is read only when a query needs its rows;
the interpretation is the one a run from scratch gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from dia_assets.agents.interpreter import interpret
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.platform.files import readers


def _write(data: Path) -> None:
    data.mkdir(exist_ok=True)
    (data / "customers.csv").write_text("customer_id,name\n" + "".join(f"{i},name {i}\n" for i in range(1, 301)))
    (data / "orders.csv").write_text(
        "order_id,customer_id,amount\n" + "".join(f"{i},{1 + i % 300},{i}.50\n" for i in range(1, 1001)))
    (data / "sensors.csv").write_text("sensor_id,reading\n" + "".join(f"{i},{i * 7 % 101}\n" for i in range(1, 501)))


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """File names read into DuckDB, in order (the interpreter's reader, spied on)."""
    seen: list[str] = []
    original = readers.read_source

    def spy(con, path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003
        seen.append(Path(path).name)
        return original(con, path, *args, **kwargs)

    for module in ("dia_assets.agents.interpreter.interpreter", "dia_assets.platform.files.scanned"):
        monkeypatch.setattr(f"{module}.read_source", spy)
    return seen


def _same(a: Interpretation, b: Interpretation) -> None:
    assert a.model_dump(exclude={"generated_at"}) == b.model_dump(exclude={"generated_at"})


def test_an_unchanged_file_is_read_only_for_the_foreign_key_measured_against_it(tmp_path: Path, reads: list[str]) -> None:
    data = tmp_path / "data"
    _write(data)
    previous = interpret(data)
    assert all(s.found_keys and s.found_keys.primary_key for s in previous.sources)
    orders = data / "orders.csv"
    orders.write_text(orders.read_text() + "1001,7,3.25\n")  # a new order of a known customer
    reads.clear()
    said: list[str] = []
    again = interpret(data, progress=said.append, previous=previous)
    # orders changed: read and profiled; customers: read on demand, to measure orders.customer_id;
    # sensors: no query needs its rows, so it is never read
    assert reads == ["orders.csv", "customers.csv"]
    assert "    profiling orders" in said
    assert sum("(profile and keys kept, not read)" in m for m in said) == 2
    assert [(f.from_.source, f.to.source) for f in again.foreign_keys if f.confidence >= 0.8] == [("orders", "customers")]
    assert again.source("sensors").primary_key.columns == ["sensor_id"]
    reads.clear()
    _same(again, interpret(data))
    assert sorted(reads) == ["customers.csv", "orders.csv", "sensors.csv"]


def test_a_change_that_keeps_the_size_is_told_by_the_hash(tmp_path: Path, reads: list[str]) -> None:
    data = tmp_path / "data"
    _write(data)
    previous = interpret(data)
    sensors = data / "sensors.csv"
    text = sensors.read_text()
    sensors.write_text(text.replace("\n2,14\n", "\n2,15\n"))  # same size, other bytes
    assert len(sensors.read_text()) == len(text)
    reads.clear()
    said: list[str] = []
    again = interpret(data, progress=said.append, previous=previous)
    assert "sensors.csv" in reads and "    profiling sensors" in said
    _same(again, interpret(data))


def test_a_previous_interpretation_without_found_keys_reads_every_file(tmp_path: Path, reads: list[str]) -> None:
    data = tmp_path / "data"
    _write(data)
    previous = interpret(data)
    for source in previous.sources:
        source.found_keys = None  # as an interpretation written before keys were kept
    reads.clear()
    again = interpret(data, previous=previous)
    assert sorted(reads) == ["customers.csv", "orders.csv", "sensors.csv"]
    _same(again, interpret(data))
