"""`dia memory ...`: load examples, inspect, search, export and forget memory items."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dia_assets.agents.locations import workspace_root
from dia_assets.agents.memory.connection import default_pgdata
from dia_assets.agents.memory.models import Kind, MemoryItem, Status, Tier

if TYPE_CHECKING:
    from dia_assets.agents.memory.retrieval import MemoryFilter
    from dia_assets.agents.memory.store import MemoryStore

memory_app = typer.Typer(
    help="Shared memory (PostgreSQL + pgvector): examples and lessons.", no_args_is_help=True
)


def _open() -> MemoryStore:
    """The store named by DIA_MEMORY_URL, else the embedded one in <DIA_WORKSPACE>/pgdata.

    Imports are lazy so `dia --help` stays fast."""
    from dia_assets.agents.memory.connection import MemoryStoreUnavailable
    from dia_assets.agents.memory.store import MemoryStore

    try:
        return MemoryStore.open(
            url=os.environ.get("DIA_MEMORY_URL") or None, pgdata=default_pgdata()
        )
    except MemoryStoreUnavailable as err:
        typer.secho(str(err), fg="red", err=True)
        raise typer.Exit(2) from err


def _filters(
    tier: list[str] | None, kind: list[str] | None, scope: str | None, status: list[str] | None
) -> MemoryFilter:
    from dia_assets.agents.memory.retrieval import MemoryFilter

    return MemoryFilter(
        tiers=[Tier(t) for t in tier] if tier else None,
        kinds=[Kind(k) for k in kind] if kind else None,
        scope=scope,
        statuses=[Status(s) for s in status] if status else [Status.ACTIVE],
    )


def _line(item: MemoryItem) -> str:
    return (
        f"#{item.id:<7} {item.tier.value:<13} {item.kind.value:<17} {item.status.value:<10} "
        f"used {item.use_count}/{item.success_count}  {item.title[:80]}"
    )


TierOpt = Annotated[
    list[str] | None, typer.Option("--tier", help="example, session, cross_session")
]
KindOpt = Annotated[list[str] | None, typer.Option("--kind", help="join, aggregation, filter, ...")]
ScopeOpt = Annotated[str | None, typer.Option("--scope", help="database fingerprint")]
JsonOpt = Annotated[bool, typer.Option("--json", help="machine-readable output")]


@memory_app.command("import-examples")
def import_examples(
    file: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="JSONL of question/sql pairs")
    ],
    scope: Annotated[str, typer.Option(help="scope for rows without `scope`/`db_id`")] = "",
) -> None:
    """Load question/SQL pairs (with optional column notes) as `example` items."""
    from dia_assets.agents.memory.examples import read_examples

    try:
        items = list(read_examples(file, default_scope=scope))
    except ValueError as err:
        typer.secho(str(err), fg="red", err=True)
        raise typer.Exit(1) from err
    with _open() as store:
        report = store.import_examples(items)
    typer.echo(
        f"read {report.read}, inserted {report.inserted}, duplicates {report.duplicates} "
        f"({', '.join(f'{k} {v:.1f}s' for k, v in report.seconds.items())})"
    )


@memory_app.command("list")
def list_items(
    tier: TierOpt = None,
    kind: KindOpt = None,
    scope: ScopeOpt = None,
    status: Annotated[
        list[str] | None, typer.Option("--status", help="active, superseded, archived")
    ] = None,
    limit: int = 50,
    as_json: JsonOpt = False,
) -> None:
    """List items (active by default), oldest first."""
    with _open() as store:
        items = store.list_items(_filters(tier, kind, scope, status), limit=limit)
    if as_json:
        typer.echo(json.dumps([i.model_dump(mode="json") for i in items], indent=2))
        return
    for item in items:
        typer.echo(_line(item))
    if not items:
        typer.echo("no items")


@memory_app.command("show")
def show(item_id: int, as_json: JsonOpt = False) -> None:
    """One item in full: rule or SQL, probe, evidence, versions and events."""
    with _open() as store:
        try:
            item = store.get(item_id)
        except KeyError as err:
            typer.secho(str(err), fg="red", err=True)
            raise typer.Exit(1) from err
        versions, edges = store.history(item_id)
        events = store.events(item_id)
    if as_json:
        payload = {
            "item": item.model_dump(mode="json"),
            "versions": [v.model_dump(mode="json") for v in versions],
            "edges": [e.model_dump(mode="json") for e in edges],
            "events": events,
        }
        typer.echo(json.dumps(payload, indent=2, default=str))
        return
    typer.echo(_line(item))
    typer.echo(
        f"scope: {item.scope or '-'}  importance {item.importance:.2f}  confidence {item.confidence:.2f}"
    )
    if item.question:
        typer.echo(f"question: {item.question}")
    typer.echo(f"\n{item.body}\n")
    if item.probe_sql:
        typer.echo(f"probe: {item.probe_sql}")
    for note, meaning in item.notes.items():
        typer.echo(f"note {note}: {meaning}")
    for e in item.evidence:
        typer.echo(f"evidence ({e.source}): {e.text}")
    for e in edges:
        typer.echo(f"edge #{e.src_id} -{e.relation}-> #{e.dst_id} {e.detail}")
    for ev in events[-10:]:
        typer.echo(f"event {ev['at'][:19]} {ev['event']} {ev['scope'] or ''} {ev['detail']}")


@memory_app.command("search")
def search(
    query: str,
    k: int = 10,
    tier: TierOpt = None,
    kind: KindOpt = None,
    scope: ScopeOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Hybrid retrieval: references with their fused score (pull bodies with `show`)."""
    with _open() as store:
        refs = store.retrieve(query, k=k, filters=_filters(tier, kind, scope, None))
    if as_json:
        typer.echo(json.dumps([r.model_dump(mode="json") for r in refs], indent=2))
        return
    for r in refs:
        typer.echo(
            f"#{r.id:<7} {r.score:.3f}  sim {r.similarity:.3f} text {r.text_score:.3f}  [{r.tier.value}/{r.kind.value}] {r.title[:80]}"
        )


@memory_app.command("export")
def export(
    out: Annotated[
        Path | None, typer.Option(help="default <DIA_WORKSPACE>/memory/lessons.md")
    ] = None,
) -> None:
    """Write lessons.md for expert review."""
    from dia_assets.agents.memory.export import export_lessons

    path = out or workspace_root() / "memory" / "lessons.md"
    with _open() as store:
        export_lessons(store, path)
    typer.echo(f"wrote {path}")


@memory_app.command("forget")
def forget(
    ids: Annotated[
        list[int] | None, typer.Argument(help="items to archive (or delete with --hard)")
    ] = None,
    hard: Annotated[bool, typer.Option("--hard", help="delete instead of archiving")] = False,
    auto: Annotated[bool, typer.Option("--auto", help="archive by the forgetting policy")] = False,
) -> None:
    """Archive items by id, delete them with --hard, or apply the forgetting policy with --auto."""
    if not ids and not auto:
        typer.secho("give item ids or --auto", fg="red", err=True)
        raise typer.Exit(1)
    with _open() as store:
        if auto:
            from dia_assets.agents.memory.maintenance import forget as forget_policy

            for change in forget_policy(store):
                typer.echo(f"archived #{change.item_id}: {change.reason}")
        if ids:
            done = (
                store.delete(ids) if hard else store.set_status(ids, Status.ARCHIVED, "cli request")
            )
            typer.echo(
                f"{'deleted' if hard else 'archived'} {len(done)}: {' '.join(f'#{i}' for i in done)}"
            )


@memory_app.command("maintain")
def maintain() -> None:
    """Consolidate, promote and forget now (what the `memory_lessons` asset does)."""
    from dia_assets.agents.memory.maintenance import run_maintenance

    with _open() as store:
        report = run_maintenance(store)
    for c in report.changes:
        typer.echo(
            f"{c.action} #{c.item_id}{f' into #{c.into_id}' if c.into_id else ''}: {c.reason}"
        )
    typer.echo(json.dumps(report.counts))
