"""Two small data folders of different shapes: a shop that brings its own questions and an
expert correction, and a music catalogue with neither (tests/test_own_data.py and the
second-folder browser test)."""

from __future__ import annotations

from pathlib import Path

A_QUESTIONS = "- id: customers_per_city\n  question: How many customers live in each city?\n" \
              "- id: order_total\n  question: What is the total of all orders?\n"
A_OVERRIDES = "version: 1\ntables:\n  customers:\n    rename: clients\n"


def folder_a(root: Path) -> Path:
    """A small folder with its own questions and an expert correction."""
    data = root / "shop"
    data.mkdir(parents=True)
    (data / "customers.csv").write_text("customer_id,name,city\n" + "".join(
        f"{i},name{i},{['Oslo', 'Bergen', 'Tromso'][i % 3]}\n" for i in range(1, 41)))
    (data / "orders.csv").write_text("order_id,customer_id,amount\n" + "".join(
        f"{i},{i % 40 + 1},{i * 3}.25\n" for i in range(1, 121)))
    (data / "questions.yaml").write_text(A_QUESTIONS)
    (data / "overrides.yaml").write_text(A_OVERRIDES)
    return data


def folder_b(root: Path) -> Path:
    """Another small folder with neither questions nor overrides."""
    data = root / "music"
    data.mkdir(parents=True)
    (data / "artists.csv").write_text("artist_id,artist_name\n" + "".join(f"{i},artist{i}\n" for i in range(1, 31)))
    (data / "albums.csv").write_text("album_id,title,artist_id\n" + "".join(
        f"{i},album{i},{i % 30 + 1}\n" for i in range(1, 91)))
    return data
