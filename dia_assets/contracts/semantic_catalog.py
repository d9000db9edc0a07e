"""The semantic catalog (Data Agents §III-A): a tree of labels over the warehouse, domain
-> entity (a table) -> attribute (a column), written to `catalog/semantic_catalog.json` and
to the shared PostgreSQL + pgvector memory, where it is searched."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from dia_assets.contracts.artifact import Artifact

CATALOG_VERSION = 1
Level = Literal["domain", "entity", "attribute"]


class CatalogNode(BaseModel):
    id: str = Field(description="domain:<slug>, entity:<table> or attribute:<table>.<column>.")
    level: Level
    label: str
    parent: str | None = None
    table: str | None = None
    column: str | None = None
    source: str | None = Field(None, description="Raw source (file) the table comes from.")
    semantic_type: str | None = None
    data_type: str | None = None
    description: str = Field("", description="The text that is embedded and searched.")
    examples: list[str] = []
    row_count: int | None = None
    distinct_count: int | None = None
    null_fraction: float | None = None
    identifier: bool = Field(False, description="An attribute that holds identifiers (keys, codes), "
                             "not something a plain question asks about: search ranks it lower.")
    related: list[str] = Field(default_factory=list, description="Related attribute ids: keys that "
                               "join, and columns close in embedding space.")

    def path(self, by_id: dict[str, CatalogNode]) -> str:
        parts, node = [self.label], self
        while node.parent and node.parent in by_id:
            node = by_id[node.parent]
            parts.append(node.label)
        return " > ".join(reversed(parts))


class SemanticCatalog(Artifact):
    version: int = CATALOG_VERSION
    generated_at: str
    scope: str = Field(description="Warehouse fingerprint the labels describe.")
    embedding_model: str
    nodes: list[CatalogNode] = []
    domain_naming: Literal["model", "names"] = "names"

    def by_id(self) -> dict[str, CatalogNode]:
        return {n.id: n for n in self.nodes}

    def children(self, node_id: str) -> list[CatalogNode]:
        return [n for n in self.nodes if n.parent == node_id]

    def counts(self) -> dict[str, int]:
        out = {"domain": 0, "entity": 0, "attribute": 0}
        for n in self.nodes:
            out[n.level] += 1
        return out
