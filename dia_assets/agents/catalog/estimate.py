"""Cardinality estimates for semantic operators from the catalog (Data Agents §IV-A): find
the column's label, take the sample values stored under it, and score them against the
operator's condition. A rough prior, used only to order operators before they run; each
operator reports its measured selectivity after it ran."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dia_assets.contracts.semantic_catalog import CatalogNode
from dia_assets.platform.embeddings import Embedder

# cosine similarities (WordLlama) mapped to "matches": below LOW none, above HIGH all
LOW, HIGH = 0.15, 0.55
UNKNOWN = 0.5


@dataclass
class Estimate:
    table: str
    column: str
    rows_in: int | None
    selectivity: float
    basis: str

    @property
    def rows_out(self) -> float | None:
        return None if self.rows_in is None else self.rows_in * self.selectivity


def estimate_filter(nodes: dict[str, CatalogNode], table: str, column: str, condition: str,
                    embedder: Embedder) -> Estimate:
    """Share of the column's catalog samples that look like they satisfy `condition`."""
    node = nodes.get(f"attribute:{table}.{column}")
    entity = nodes.get(f"entity:{table}")
    rows = (node.row_count if node else None) or (entity.row_count if entity else None)
    samples = [s for s in (node.examples if node else []) if s.strip()]
    if not samples:
        return Estimate(table, column, rows, UNKNOWN, "no catalog samples: prior 0.5")
    vecs = embedder.embed(samples)
    q = embedder.embed([condition])[0]
    sims = vecs @ q
    sel = float(np.clip((sims - LOW) / (HIGH - LOW), 0.0, 1.0).mean())
    sel = min(0.95, max(0.05, sel))
    return Estimate(table, column, rows, round(sel, 4), f"{len(samples)} catalog samples")
