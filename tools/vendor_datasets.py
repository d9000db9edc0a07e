"""Copy small extracts of the shared development datasets into tests/fixtures/datasets/.

The interpretation goldens (tests/test_interpretation_snapshot.py) then run in every checkout,
not only where `../shared/datasets` happens to sit beside the repository. Rows are copied as
their raw bytes (quoting, empty fields and line ends untouched), so an extract reads the way
the full file does; it only has fewer rows. Northwind, classicmodels and hr are small and copied
whole (with truth.json). pagila and tpch are cut so that every declared foreign key still holds:

- pagila: films with film_id <= 150, and the film_actor, film_category and inventory rows of
  those films, the rentals of that inventory and the payments of those rentals; every other
  table whole.
- tpch: parts with p_partkey <= 200 and their partsupp rows, customers with c_custkey <= 100
  and their orders, and the lineitems of those orders whose part is kept; region, nation and
  supplier whole.

    python tools/vendor_datasets.py [--from ../shared/datasets]

Re-running it gives the same bytes; regenerate the goldens afterwards (docs/development.md).
"""

from __future__ import annotations

import argparse
import csv
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET = ROOT / "tests" / "fixtures" / "datasets"
WHOLE = ("northwind", "classicmodels", "hr")

Row = dict[str, str]


def records(path: Path) -> Iterator[tuple[Row | None, str]]:
    """(row, raw text) per CSV record, the header first with row None. A quoted field may span
    lines: the raw text is every line the record took."""
    with path.open(encoding="utf-8", newline="") as fh:
        taken: list[str] = []

        def lines() -> Iterator[str]:
            for line in fh:
                taken.append(line)
                yield line

        reader = csv.reader(lines())  # pulls one line at a time: no read-ahead
        header = next(reader)
        yield None, "".join(taken)
        taken.clear()
        for values in reader:
            raw = "".join(taken)
            taken.clear()
            yield dict(zip(header, values, strict=True)), raw


def extract(src: Path, dst: Path, keep: Callable[[Row], bool]) -> list[Row]:
    """Write the header and the records `keep` accepts, byte for byte; return the kept rows."""
    kept: list[Row] = []
    with dst.open("w", encoding="utf-8", newline="") as out:
        for row, raw in records(src):
            if row is None or keep(row):
                out.write(raw)
                if row is not None:
                    kept.append(row)
    return kept


def _whole(src: Path, dst: Path) -> None:
    shutil.copyfile(src, dst)


def pagila(src: Path, dst: Path) -> None:
    big = {"film", "film_actor", "film_category", "inventory", "rental", "payment"}
    for path in sorted(src.glob("*.csv")):
        if path.stem not in big:
            _whole(path, dst / path.name)
    films = {r["film_id"] for r in extract(src / "film.csv", dst / "film.csv", lambda r: int(r["film_id"]) <= 150)}
    extract(src / "film_actor.csv", dst / "film_actor.csv", lambda r: r["film_id"] in films)
    extract(src / "film_category.csv", dst / "film_category.csv", lambda r: r["film_id"] in films)
    stock = {r["inventory_id"] for r in extract(src / "inventory.csv", dst / "inventory.csv",
                                                lambda r: r["film_id"] in films)}
    rentals = {r["rental_id"] for r in extract(src / "rental.csv", dst / "rental.csv",
                                               lambda r: r["inventory_id"] in stock)}
    extract(src / "payment.csv", dst / "payment.csv", lambda r: r["rental_id"] in rentals)


def tpch(src: Path, dst: Path) -> None:
    for name in ("region", "nation", "supplier"):
        _whole(src / f"{name}.csv", dst / f"{name}.csv")
    parts = {r["p_partkey"] for r in extract(src / "part.csv", dst / "part.csv", lambda r: int(r["p_partkey"]) <= 200)}
    extract(src / "partsupp.csv", dst / "partsupp.csv", lambda r: r["ps_partkey"] in parts)
    customers = {r["c_custkey"] for r in extract(src / "customer.csv", dst / "customer.csv",
                                                 lambda r: int(r["c_custkey"]) <= 100)}
    orders = {r["o_orderkey"] for r in extract(src / "orders.csv", dst / "orders.csv",
                                               lambda r: r["o_custkey"] in customers)}
    extract(src / "lineitem.csv", dst / "lineitem.csv",
            lambda r: r["l_orderkey"] in orders and r["l_partkey"] in parts)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, default=ROOT.parent / "shared" / "datasets")
    args = parser.parse_args(argv)
    for name in (*WHOLE, "pagila", "tpch"):
        raw = TARGET / name / "raw"
        if raw.exists():
            shutil.rmtree(raw)
        raw.mkdir(parents=True)
        src = args.source / name / "raw"
        if name in WHOLE:
            for path in sorted(src.glob("*.csv")):
                _whole(path, raw / path.name)
            shutil.copyfile(args.source / name / "truth.json", TARGET / name / "truth.json")
        else:
            {"pagila": pagila, "tpch": tpch}[name](src, raw)
        size = sum(p.stat().st_size for p in raw.iterdir())
        rows = sum(sum(1 for _ in records(p)) - 1 for p in sorted(raw.glob("*.csv")))
        print(f"{name}: {len(list(raw.iterdir()))} files, {rows} rows, {size / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
