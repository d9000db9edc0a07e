"""Build the label tree from the interpretation and the manifest: one entity per refined
table, one attribute per column, and domains found by clustering the entities' embeddings
(named by a model when one is configured, else by their tables' names)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from dia_assets.agents.catalog.column_text import (
    column_text,
    humanize,
    is_identifier,
    name_words,
    sample_values,
)
from dia_assets.agents.semantic_ops import kmeans
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.contracts.manifest import Manifest
from dia_assets.contracts.semantic_catalog import CatalogNode, SemanticCatalog
from dia_assets.platform.embeddings import Embedder
from dia_assets.platform.key_names import SchemaNames
from dia_assets.platform.tables.stats import TableStats

RELATED_MIN_SIMILARITY = 0.9
# names the clusters: list of (cluster id, member descriptions) -> {cluster id: name}
DomainNamer = Callable[[list[tuple[str, list[str]]]], dict[str, str]]


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "domain"


def _attribute(names: SchemaNames, table: Any, col: Any, source_col: Any) -> tuple[str, bool, str]:
    """(what the column holds, in words; whether it is an identifier; its name as words):
    see column_text.py."""
    source = table.sources[0] if table.sources else table.name
    raw = col.source_column or col.name
    words = name_words(names, source, raw)
    keys = set(table.primary_key) | {c for fk in table.foreign_keys for c in fk.columns}
    examples = list(source_col.examples) if source_col is not None else []
    tops = [v for v, _ in source_col.top_values] if source_col is not None else []
    identifier = is_identifier(raw, "_".join(names.stripped(source, raw.lower())), col.semantic_type,
                               col.name in keys, examples + tops)
    entity = " ".join(names.entity(source)) or humanize(table.name)
    text = column_text(words, entity, col.semantic_type, source_col.description if source_col else None,
                       identifier, sample_values(tops + examples))
    return text, identifier, " ".join(words)


def _figures(table: str, column: str | None, src: Any, scol: Any,
             stats: Mapping[str, TableStats] | None) -> dict[str, Any]:
    """Row count, distinct count and null share of a node: read from the installed table when the
    warehouse was read (`stats`; a table it lacks has none), else the source file's profile."""
    if stats is None:
        return {"row_count": src.row_count if src else None,
                **({"distinct_count": scol.distinct_count if scol else None,
                    "null_fraction": scol.null_fraction if scol else None} if column else {})}
    ts = stats.get(table)
    out: dict[str, Any] = {"row_count": ts.rows if ts else None}
    if column:
        c = ts.columns.get(column) if ts else None
        out["distinct_count"] = c.distinct if c else None
        out["null_fraction"] = (c.nulls / ts.rows if ts.rows else 0.0) if c and ts else None
    return out


def entities_and_attributes(interpretation: Interpretation, manifest: Manifest,
                            stats: Mapping[str, TableStats] | None = None) -> list[CatalogNode]:
    nodes: list[CatalogNode] = []
    sources = {s.name: s for s in interpretation.sources}
    names = SchemaNames(interpretation.sources)
    for table in manifest.tables:
        src = sources.get(table.sources[0]) if table.sources else None
        words = ", ".join(humanize(c.name) for c in table.columns[:12])
        text = f"{humanize(table.name)}: a table with {words}"
        if src is not None and src.description:
            text += f". {src.description}"
        nodes.append(CatalogNode(
            id=f"entity:{table.name}", level="entity", label=humanize(table.name), table=table.name,
            source=table.source_path, description=text, **_figures(table.name, None, src, None, stats)))
        for col in table.columns:
            scol = None
            if src is not None:
                scol = next((c for c in src.columns if c.name == col.source_column), None)
            text, identifier, label = _attribute(names, table, col, scol)
            nodes.append(CatalogNode(
                id=f"attribute:{table.name}.{col.name}", level="attribute", label=label,
                parent=f"entity:{table.name}", table=table.name, column=col.name,
                source=table.source_path, semantic_type=col.semantic_type, data_type=col.type,
                description=text, identifier=identifier,
                examples=[str(x) for x in (scol.examples[:5] if scol else [])]
                + [str(v) for v, _ in (scol.top_values[:5] if scol else []) if v is not None],
                **_figures(table.name, col.name, src, scol, stats)))
        for fk in table.foreign_keys:
            for a, b in zip(fk.columns, fk.ref_columns, strict=False):
                left, right = f"attribute:{table.name}.{a}", f"attribute:{fk.ref_table}.{b}"
                for node in nodes:
                    if node.id == left and right not in node.related:
                        node.related.append(right)
    by_id = {n.id: n for n in nodes}
    for n in list(nodes):  # key links both ways
        for r in n.related:
            if r in by_id and n.id not in by_id[r].related:
                by_id[r].related.append(n.id)
    return nodes


def _domains(entities: list[CatalogNode], vectors: np.ndarray, namer: DomainNamer | None,
             seed: int) -> tuple[list[CatalogNode], dict[str, str]]:
    """Cluster the entities; each cluster is a domain. Returns domains and entity -> domain."""
    k = max(1, round(np.sqrt(len(entities) / 2))) if entities else 0
    _, members = kmeans(vectors, k, seed) if len(entities) else ([], [])
    groups = [[entities[i] for i in m] for m in members]
    names = {str(n): " & ".join(sorted(e.label for e in g[:2])) + (" ..." if len(g) > 2 else "")
             for n, g in enumerate(groups)}
    if namer is not None and groups:
        names.update({k: v for k, v in namer([(str(n), [e.description for e in g[:5]])
                                              for n, g in enumerate(groups)]).items() if v})
    domains, parent = [], {}
    used: set[str] = set()
    for n, g in enumerate(groups):
        label = names[str(n)]
        node_id = f"domain:{slug(label)}"
        while node_id in used:
            node_id += "_"
        used.add(node_id)
        domains.append(CatalogNode(
            id=node_id, level="domain", label=label,
            description=f"{label}: " + "; ".join(e.label for e in g),
            row_count=sum(e.row_count or 0 for e in g)))
        for e in g:
            parent[e.id] = node_id
    return domains, parent


def build_catalog(interpretation: Interpretation, manifest: Manifest, embedder: Embedder, scope: str,
                  namer: DomainNamer | None = None, seed: int = 0,
                  stats: Mapping[str, TableStats] | None = None) -> tuple[SemanticCatalog, np.ndarray]:
    """The catalog and one embedding per node (same order as `catalog.nodes`); counts from the
    installed tables' `stats` when given."""
    nodes = entities_and_attributes(interpretation, manifest, stats)
    entities = [n for n in nodes if n.level == "entity"]
    ent_vecs = embedder.embed([e.description for e in entities]) if entities else np.zeros((0, embedder.dim))
    domains, parent = _domains(entities, ent_vecs, namer, seed)
    for e in entities:
        e.parent = parent.get(e.id)
    attributes = [n for n in nodes if n.level == "attribute"]
    att_vecs = embedder.embed([a.description for a in attributes]) if attributes else np.zeros((0, embedder.dim))
    _link_similar(attributes, att_vecs)
    dom_vecs = embedder.embed([d.description for d in domains]) if domains else np.zeros((0, embedder.dim))
    ordered = domains + entities + attributes
    vectors = np.vstack([dom_vecs, ent_vecs, att_vecs]).astype(np.float32) if ordered else np.zeros((0, embedder.dim))
    catalog = SemanticCatalog(
        generated_at=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), scope=scope,
        embedding_model=embedder.name, nodes=ordered, domain_naming="model" if namer else "names")
    return catalog, vectors


def _link_similar(attributes: Sequence[CatalogNode], vectors: np.ndarray) -> None:
    """Columns of different tables that mean the same thing (near in embedding space)."""
    if len(attributes) < 2:
        return
    sims = vectors @ vectors.T
    for i, a in enumerate(attributes):
        for j in np.flatnonzero(sims[i] >= RELATED_MIN_SIMILARITY):
            b = attributes[int(j)]
            if b.table != a.table and b.id not in a.related:
                a.related.append(b.id)
