"""`dia catalog ...`: build and search the semantic catalog (Data Agents §III-A)."""

from __future__ import annotations

from typing import Annotated

import typer

from dia_assets.agents.locations import default_warehouse
from dia_assets.cli.common import EXIT_USAGE, JsonOpt, WorkspaceOpt, echo_json, fail, use_workspace
from dia_assets.platform.settings import get_settings

catalog_app = typer.Typer(help="Semantic catalog: labels over sources, tables and columns.",
                          no_args_is_help=True)


def _store():  # noqa: ANN202 - lazy imports keep `dia --help` fast
    from dia_assets.cli.memory import _open

    return _open()


def _current_scope(scopes: list[str]) -> str | None:
    """The current warehouse's scope when the catalog has it, else every scope."""
    from pathlib import Path

    from dia_assets.platform.warehouse.fingerprint import database_fingerprint

    target = default_warehouse()
    if Path(target).exists():
        scope = database_fingerprint(target)
        if scope in scopes:
            return scope
    return None


@catalog_app.command("build")
def build(as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Rebuild the catalog from interpretation.json and the manifest, into the memory store."""
    from dia_assets.agents.catalog.refresh import (
        CatalogInputsMissing,
        catalog_path,
        model_namer,
        refresh_catalog,
    )

    ws = use_workspace(workspace)
    with _store() as store:
        try:
            catalog = refresh_catalog(ws, default_warehouse(ws), store, model_namer(get_settings().model))
        except CatalogInputsMissing as err:
            fail(str(err))  # names the step to run first
    counts = catalog.counts()
    if as_json:
        echo_json({"scope": catalog.scope, "counts": counts, "path": str(catalog_path(ws))})
        return
    typer.echo(f"catalog {catalog.scope}: {counts['domain']} domains, {counts['entity']} tables, "
               f"{counts['attribute']} columns -> {catalog_path(ws)}")


@catalog_app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="Words or a question.")],
    k: Annotated[int, typer.Option("-k", help="How many nodes.")] = 10,
    level: Annotated[str | None, typer.Option(help="domain, entity or attribute.")] = None,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
) -> None:
    """Dense (pgvector) + sparse (full-text keywords) search over the catalog's labels."""
    from dia_assets.agents.catalog.store import CatalogStore

    if level not in (None, "domain", "entity", "attribute"):
        fail("--level must be domain, entity or attribute", code=EXIT_USAGE)
    use_workspace(workspace)
    with _store() as store:
        cs = CatalogStore(store)
        if not cs.scopes():
            fail("the catalog is empty", "run `dia catalog build` (or materialize semantic_catalog)")
        hits = cs.search(query, scope=_current_scope(cs.scopes()), k=k, level=level)
    if as_json:  # one JSON array (it was JSON lines)
        echo_json([hit.as_dict() for hit in hits])
        return
    for hit in hits:
        typer.echo(f"{hit.score:.4f}  {hit.node.level:<9} {hit.path}")
