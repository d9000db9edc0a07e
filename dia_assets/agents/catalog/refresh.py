"""Refresh the semantic catalog from the workspace: read interpretation.json and the
manifest, build the tree, write `catalog/semantic_catalog.json`, replace the scope's nodes
in the shared memory. The Dagster asset, `dia catalog build` and the sensors' jobs call this."""

from __future__ import annotations

from pathlib import Path

from dia_assets.agents.catalog.build import DomainNamer, build_catalog
from dia_assets.agents.catalog.store import CatalogStore
from dia_assets.contracts.interpretation import Interpretation
from dia_assets.contracts.manifest import Manifest
from dia_assets.contracts.semantic_catalog import SemanticCatalog
from dia_assets.platform.memory.store import MemoryStore
from dia_assets.platform.tables.stats import warehouse_stats
from dia_assets.platform.warehouse.fingerprint import database_fingerprint
from dia_assets.platform.workspace import Workspace


class CatalogInputsMissing(FileNotFoundError):
    """The workspace has no interpretation or manifest yet."""


def catalog_path(workspace: str | Path) -> Path:
    return Workspace(workspace).catalog


def refresh_catalog(workspace: str | Path, warehouse: str, store: MemoryStore,
                    namer: DomainNamer | None = None) -> SemanticCatalog:
    ws = Workspace(workspace)
    interp_path, manifest_path = ws.interpretation, ws.manifest
    for path, step in ((interp_path, "dia interpret"), (manifest_path, "dia build")):
        if not path.exists():
            raise CatalogInputsMissing(f"{path} does not exist yet: run `{step}` first")
    interp = Interpretation.read(interp_path)
    manifest = Manifest.read(manifest_path)
    scope = database_fingerprint(warehouse) if Path(warehouse).exists() else "no-warehouse"
    # counts from the installed tables, not the files' profiles (duplicates, rejected rows)
    stats = warehouse_stats(warehouse, [t.name for t in manifest.tables])
    catalog, vectors = build_catalog(interp, manifest, store.embedder, scope, namer, stats=stats)
    CatalogStore(store).replace(catalog, vectors)
    catalog.write(catalog_path(ws.root))
    return catalog


def model_namer(model: str | None) -> DomainNamer | None:
    """Domain names from a model through the semantic operators' judge, or None."""
    if not model:
        return None
    from dia_assets.agents.semantic_ops import Judge, JudgeTask

    judge = Judge(model, "strong")

    def name(groups: list[tuple[str, list[str]]]) -> dict[str, str]:
        answers = judge.ask(JudgeTask("name_groups", "The members are database tables; name their "
                                      "business domain."), groups)
        return {k: str(v.value) for k, v in answers.items()}

    return name
