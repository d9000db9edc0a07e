"""`dia catalog ...`: build and search the semantic catalog (Data Agents §III-A)."""

from __future__ import annotations

import json
import os
from typing import Annotated

import typer

from dia_assets.agents.locations import default_warehouse, workspace_root

catalog_app = typer.Typer(help="Semantic catalog: labels over sources, tables and columns.",
                          no_args_is_help=True)


def _store():  # noqa: ANN202 - lazy imports keep `dia --help` fast
    from dia_assets.cli_memory import _open

    return _open()


def _current_scope(scopes: list[str]) -> str | None:
    """The current warehouse's scope when the catalog has it, else every scope."""
    from pathlib import Path

    from dia_assets.agents.memory.fingerprint import database_fingerprint

    target = default_warehouse()
    if Path(target).exists():
        scope = database_fingerprint(target)
        if scope in scopes:
            return scope
    return None


@catalog_app.command("build")
def build() -> None:
    """Rebuild the catalog from interpretation.json and the manifest, into the memory store."""
    from dia_assets.agents.catalog.refresh import (
        CatalogInputsMissing,
        catalog_path,
        model_namer,
        refresh_catalog,
    )

    ws = workspace_root()
    with _store() as store:
        try:
            catalog = refresh_catalog(ws, default_warehouse(ws), store, model_namer(os.environ.get("DIA_MODEL")))
        except CatalogInputsMissing as err:
            typer.secho(str(err), fg="red", err=True)
            raise typer.Exit(2) from err
    counts = catalog.counts()
    typer.echo(f"catalog {catalog.scope}: {counts['domain']} domains, {counts['entity']} tables, "
               f"{counts['attribute']} columns -> {catalog_path(ws)}")


@catalog_app.command("search")
def search(
    query: Annotated[str, typer.Argument(help="Words or a question.")],
    k: Annotated[int, typer.Option("-k", help="How many nodes.")] = 10,
    level: Annotated[str | None, typer.Option(help="domain, entity or attribute.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON lines.")] = False,
) -> None:
    """Dense (pgvector) + sparse (full-text keywords) search over the catalog's labels."""
    from dia_assets.agents.catalog.store import CatalogStore

    if level not in (None, "domain", "entity", "attribute"):
        typer.secho("--level must be domain, entity or attribute", fg="red", err=True)
        raise typer.Exit(2)
    with _store() as store:
        cs = CatalogStore(store)
        if not cs.scopes():
            typer.secho("the catalog is empty: run `dia catalog build` (or materialize semantic_catalog)",
                        fg="red", err=True)
            raise typer.Exit(2)
        hits = cs.search(query, scope=_current_scope(cs.scopes()), k=k, level=level)
    for hit in hits:
        if as_json:
            typer.echo(json.dumps(hit.as_dict()))
        else:
            typer.echo(f"{hit.score:.4f}  {hit.node.level:<9} {hit.path}")
