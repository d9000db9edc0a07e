"""Files exported from a range-partitioned table: the rows come in blocks by month of a date
column, each block in its own order. Row order is an observation for the reviewer (PostgreSQL
would declare (date, id)), never a key: the key stays the id (issue: warehouse-style keys, "row
order is not a key"). Each case is a generated export; the negative cases change one piece of
the evidence."""

from __future__ import annotations

import csv
import random
from pathlib import Path

import duckdb

from dia_assets.agents.interpreter import interpret, partitions
from dia_assets.contracts.interpretation import Column, Interpretation

HEADER = ["invoice_id", "customer_id", "amount", "issued_at"]


def _write(folder: Path, name: str, header: list[str], rows: list[list[object]]) -> None:
    with (folder / f"{name}.csv").open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


def _stamp(rng: random.Random, year: int, month: int) -> str:
    return (f"{year}-{month:02d}-{rng.randint(1, 28):02d} {rng.randint(0, 23):02d}:"
            f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}")


def _invoices(months: list[tuple[int, int]], per_month: int, seed: int = 7) -> list[list[object]]:
    """Rows grouped by month in the given order, shuffled within each month (a heap dump),
    with ids that follow no order down the file."""
    rng = random.Random(seed)
    ids = rng.sample(range(10_000, 99_999), len(months) * per_month)
    rows = []
    for year, month in months:
        block = [[0, rng.randint(1, 50), f"{rng.randint(100, 99_999) / 100:.2f}", _stamp(rng, year, month)]
                 for _ in range(per_month)]
        rng.shuffle(block)
        rows += block
    for row, invoice_id in zip(rows, ids, strict=True):
        row[0] = invoice_id
    return rows


MONTHS = [(2024, m) for m in range(1, 6)]


def _interpret(tmp_path: Path, rows: list[list[object]], extra: dict | None = None) -> Interpretation:
    _write(tmp_path, "invoice", HEADER, rows)
    for name, (header, data) in (extra or {}).items():
        _write(tmp_path, name, header, data)
    return interpret(tmp_path)


def _issues(interp: Interpretation) -> list:
    return [i for i in interp.quality_issues if i.kind == "range_partitioned"]


def test_month_blocks_are_an_observation_and_the_key_stays(tmp_path: Path) -> None:
    rows = _invoices(MONTHS, 60)
    refunds = [[r, rows[r * 7][0], "1.00"] for r in range(1, 31)]  # refers to invoice_id
    interp = _interpret(tmp_path, rows, {"refund": (["refund_id", "invoice_id", "amount"], refunds)})
    src = interp.source("invoice")
    assert src.primary_key.columns == ["invoice_id"]
    assert src.primary_key.confidence >= 0.8
    part = src.range_partition
    assert (part.column, part.period, part.blocks, part.unique_key) == ("issued_at", "month", 5, ["invoice_id"])
    (issue,) = _issues(interp)
    assert (issue.source, issue.column, issue.count, issue.severity) == ("invoice", "issued_at", 5, "info")
    assert "range-partitioned on 'issued_at'" in issue.message and "primary key (invoice_id)" in issue.message
    assert "declare (issued_at, invoice_id)" in issue.suggested_action
    fks = {(f.from_.source, tuple(f.from_.columns), f.to.source, tuple(f.to.columns))
           for f in interp.foreign_keys if f.confidence >= 0.8}
    assert ("refund", ("invoice_id",), "invoice", ("invoice_id",)) in fks


def test_monthly_batches_in_any_order_keep_the_id(tmp_path: Path) -> None:
    """Extracts appended month by month (rows of a month in any order) look the same: the key is
    never the date and the id."""
    rng = random.Random(11)
    rows, ids = [], iter(range(1, 10_000))
    for month in range(1, 7):
        block = [[next(ids), rng.randint(1, 50), "5.00", _stamp(rng, 2025, month)] for _ in range(50)]
        rng.shuffle(block)
        rows += block
    assert _interpret(tmp_path, rows).source("invoice").primary_key.columns == ["invoice_id"]


def test_year_blocks_over_several_years(tmp_path: Path) -> None:
    """Within one year the months are mixed: the coarsest period with three blocks is the year."""
    rng = random.Random(3)
    rows = []
    for year in (2021, 2022, 2023, 2024):
        block = [[0, rng.randint(1, 50), "9.99", _stamp(rng, year, rng.randint(1, 12))] for _ in range(40)]
        rows += block
    for row, invoice_id in zip(rows, rng.sample(range(1000, 9999), len(rows)), strict=True):
        row[0] = invoice_id
    src = _interpret(tmp_path, rows).source("invoice")
    assert src.primary_key.columns == ["invoice_id"]
    assert (src.range_partition.period, src.range_partition.blocks) == ("year", 4)


def test_file_sorted_by_date_is_no_partition(tmp_path: Path) -> None:
    rows = sorted(_invoices(MONTHS, 60), key=lambda r: r[3])
    interp = _interpret(tmp_path, rows)
    assert interp.source("invoice").primary_key.columns == ["invoice_id"]
    assert interp.source("invoice").range_partition is None
    assert not _issues(interp)


def test_nearly_date_sorted_file_is_no_partition(tmp_path: Path) -> None:
    """A file in date order with a few late rows inside their month is still ordered by date."""
    rows = sorted(_invoices(MONTHS, 60), key=lambda r: r[3])
    for i in range(10, len(rows), 60):  # one swap per month, away from the month's edges
        rows[i], rows[i + 1] = rows[i + 1], rows[i]
    assert any(a[3] > b[3] for a, b in zip(rows, rows[1:], strict=False))
    assert _interpret(tmp_path, rows).source("invoice").primary_key.columns == ["invoice_id"]


def test_a_single_month_is_no_partition(tmp_path: Path) -> None:
    rows = _invoices([(2024, 3)], 300)
    assert _interpret(tmp_path, rows).source("invoice").primary_key.columns == ["invoice_id"]


def test_two_months_are_no_partition(tmp_path: Path) -> None:
    """Two blocks are as likely a file appended to once."""
    rows = _invoices([(2024, 3), (2024, 4)], 150)
    assert _interpret(tmp_path, rows).source("invoice").primary_key.columns == ["invoice_id"]


def test_key_sorted_down_the_file_is_no_partition(tmp_path: Path) -> None:
    """Ids given in file order: the file is ordered by its key, whatever the dates do."""
    rows = _invoices(MONTHS, 60)
    for n, row in enumerate(rows, start=1):
        row[0] = n
    interp = _interpret(tmp_path, rows)
    assert interp.source("invoice").primary_key.columns == ["invoice_id"]
    assert not _issues(interp)


def test_months_out_of_order_are_no_partition(tmp_path: Path) -> None:
    """Blocks by month, but a later month comes first: not the dump of range partitions."""
    rows = _invoices([(2024, 2), (2024, 1), (2024, 3), (2024, 4), (2024, 5)], 60)
    assert _interpret(tmp_path, rows).source("invoice").primary_key.columns == ["invoice_id"]


def test_few_rows_are_no_partition(tmp_path: Path) -> None:
    """Nine rows in three monthly blocks fall into order by chance as easily as by design."""
    rows = _invoices([(2024, 1), (2024, 2), (2024, 3)], 3)
    assert _interpret(tmp_path, rows).source("invoice").primary_key.columns == ["invoice_id"]


def test_long_file_is_read_strided_then_checked_whole(tmp_path: Path) -> None:
    """On a long file every n-th row is looked at, then the blocks are checked on every row."""
    rows = _invoices(MONTHS, 5_000)
    assert len(rows) // partitions.LOOK_ROWS == 2
    src = _interpret(tmp_path, rows).source("invoice")
    assert src.primary_key.columns == ["invoice_id"]
    assert src.range_partition.blocks == 5


def test_long_file_whose_blocks_break_between_the_strided_rows(tmp_path: Path) -> None:
    """A January row inside the March block, at a row the strided look skips: the whole-file
    check still sees the blocks overlap."""
    rows = _invoices(MONTHS, 5_000)
    jan, mar = 2_001, 2 * 5_000 + 2_001  # odd rows; the look reads every second row from row 0
    rows[jan], rows[mar] = rows[mar], rows[jan]
    src = _interpret(tmp_path, rows).source("invoice")
    assert src.primary_key.columns == ["invoice_id"]
    assert src.range_partition is None


def test_strided_look_alone_rejects_mixed_months(monkeypatch) -> None:  # noqa: ANN001
    """A long table whose months go back is rejected by the strided look, without the full pass."""
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE t AS SELECT CAST(hash(i) % 1000000000 AS VARCHAR) AS id, "
        "CAST(DATE '2024-01-01' + CAST(hash(i, 2) % 150 AS INTEGER) AS VARCHAR) AS d FROM range(50000) r(i)"
    )
    date = Column(name="d", original_name="d", physical_type="VARCHAR", semantic_type="date", inferred_type="DATE")
    key = Column(name="id", original_name="id", physical_type="VARCHAR", semantic_type="id", inferred_type="BIGINT")
    calls: list[str] = []
    measure = partitions._measure

    def counted(*args):  # noqa: ANN002, ANN202
        calls.append(args[-1])
        return measure(*args)

    monkeypatch.setattr(partitions, "_measure", counted)
    assert partitions._blocks(con, "t", date, key, 50_000) is None
    assert calls == ["WHERE rowid % 5 = 0"]


def test_reused_profile_keeps_one_decision(tmp_path: Path) -> None:
    """An unchanged file keeps its profile on the next run; its keys, and the issue, are found again once."""
    first = _interpret(tmp_path, _invoices(MONTHS, 60))
    again = interpret(tmp_path, previous=first)
    assert again.source("invoice").primary_key.columns == ["invoice_id"]
    assert again.source("invoice").range_partition == first.source("invoice").range_partition
    assert len(_issues(again)) == 1


def test_partitioned_export_builds_and_validates(tmp_path: Path) -> None:
    """The (timestamp with offset, id) key a schema file declares loads, and its lookup query finds
    the row again (the key's text is compared as the database writes it: `+00`, not `+00:00`)."""
    from dia_assets.pipeline import run

    data = tmp_path / "data"
    data.mkdir()
    rows = _invoices(MONTHS, 60)
    for row in rows:
        row[3] = f"{row[3]}.123456+00"
    _write(data, "invoice", HEADER, rows)
    (data / "schema.sql").write_text(
        "CREATE TABLE invoice (invoice_id integer, customer_id integer, amount numeric(10,2), "
        "issued_at timestamptz, PRIMARY KEY (issued_at, invoice_id));\n", encoding="utf-8")
    result = run(data, tmp_path / "ws")
    (table,) = result.manifest.tables
    assert table.primary_key == ["issued_at", "invoice_id"]
    (lookup,) = [t for t in result.report.test_queries if t.name == "lookup invoice by key"]
    assert lookup.passed, lookup.error
    assert result.report.accepted


def test_a_declared_key_settles_it(tmp_path: Path) -> None:
    """A schema file beside the data that declares the id alone wins, and no partition decision
    is left claiming otherwise."""
    (tmp_path / "schema.sql").write_text(
        "CREATE TABLE invoice (invoice_id integer PRIMARY KEY, customer_id integer, amount numeric(10,2), "
        "issued_at timestamp);\n", encoding="utf-8")
    interp = _interpret(tmp_path, _invoices(MONTHS, 60))
    src = interp.source("invoice")
    assert (src.primary_key.columns, src.primary_key.source) == (["invoice_id"], "declared")
    assert src.range_partition is None
    assert not _issues(interp)


def test_a_declared_partition_key_keeps_the_evidence(tmp_path: Path) -> None:
    (tmp_path / "schema.sql").write_text(
        "CREATE TABLE invoice (invoice_id integer, customer_id integer, amount numeric(10,2), "
        "issued_at timestamp, PRIMARY KEY (issued_at, invoice_id));\n", encoding="utf-8")
    interp = _interpret(tmp_path, _invoices(MONTHS, 60))
    src = interp.source("invoice")
    assert (src.primary_key.columns, src.primary_key.source) == (["issued_at", "invoice_id"], "declared")
    assert src.range_partition is not None
    (issue,) = _issues(interp)
    assert "primary key (issued_at, invoice_id) as declared" in issue.message
