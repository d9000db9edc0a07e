"""The synthetic source of the adaptation replays (tests/test_adaptation_replay.py, sensors
called directly; tests/faults/test_adaptation_live.py, a real daemon): customers, products and
orders as a source system changes them, the saved answers that read them and an expert's old
overrides file."""

from __future__ import annotations

import random

# An expert's overrides file written by an older DIA, whose template made table and column
# names live keys: the rename step must not break the build through it.
OLD_TEMPLATE = """version: 1
tables:
  orders:
    columns:
      note:
        # exclude: "reason"
      quantity:
"""


def customers(broken: bool = False, phone: bool = False, blank_city: bool = False) -> str:
    rng = random.Random(3)
    rows = ["customer_id,first_name,last_name,city" + (",phone" if phone else "")]
    firsts = ["Ann", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal", "Ivy", "Jo", "Kay", "Lu", "Max", "Ned", "Oz"]
    for i in range(1, 121):
        city = "" if blank_city and i % 2 else rng.choice(["Oslo", "Rome", "Lima", "Kiev", "Bern"])
        rows.append(f"{i},{firsts[i % len(firsts)]},Last{i:03d},{city}" + (f",555-{i:04d}" if phone else ""))
    if broken:  # three ids reused with different names
        rows += [f"{i},New{i},Other{i},Oslo" + (",555-9999" if phone else "") for i in (5, 6, 7)]
    return "\n".join(rows) + "\n"


def products(scale: float = 1.0) -> str:
    rows = ["product_id,name,sale_price"]
    rows += [f"P{i:02d},Product {i},{(10 + i * 1.5) * scale:.2f}" for i in range(1, 31)]  # 30 rows: PSI is skipped
    return "\n".join(rows) + "\n"


def orders(note: str = "note", dups: int = 0) -> str:
    rng = random.Random(5)
    rows = [f"order_id,customer_id,product_id,quantity,{note}"]
    rows += [f"{i},{rng.randint(1, 120)},P{rng.randint(1, 30):02d},{rng.randint(1, 9)},n{i % 7}" for i in range(1, 301)]
    return "\n".join(rows + rows[1:dups + 1]) + "\n"


QUERIES = {
    "cities": "SELECT city, count(*) FROM customers GROUP BY city",
    "prices": "SELECT avg(sale_price) FROM products",
    "volume": "SELECT sum(quantity) FROM orders",
    "notes": "SELECT note, count(*) FROM orders GROUP BY note",
}
