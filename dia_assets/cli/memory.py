"""`dia memory ...`: load examples, inspect, search, export and forget memory items."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from dia_assets.cli.common import EXIT_USAGE, JsonOpt, WorkspaceOpt, echo_json, fail, use_workspace
from dia_assets.platform.memory.connection import default_pgdata
from dia_assets.platform.memory.models import Kind, MemoryItem, Status, Tier
from dia_assets.platform.settings import get_settings
from dia_assets.platform.workspace import Workspace

if TYPE_CHECKING:
    from dia_assets.platform.memory.retrieval import MemoryFilter
    from dia_assets.platform.memory.store import MemoryStore

memory_app = typer.Typer(
    help="Shared memory (PostgreSQL + pgvector): examples and lessons.", no_args_is_help=True
)


def _open() -> MemoryStore:
    """The store named by DIA_MEMORY_URL, else the embedded one in <DIA_WORKSPACE>/pgdata.

    Imports are lazy so `dia --help` stays fast. An unreachable store is a failed operation
    (exit 1, one line naming DIA_MEMORY_URL)."""
    from dia_assets.platform.memory.connection import MemoryStoreUnavailable
    from dia_assets.platform.memory.store import MemoryStore

    try:
        return MemoryStore.open(
            url=get_settings().memory_url, pgdata=default_pgdata()
        )
    except MemoryStoreUnavailable as err:
        fail(str(err), "check DIA_MEMORY_URL (unset it to use the embedded PostgreSQL in <workspace>/pgdata)")


def _filters(
    tier: list[str] | None, kind: list[str] | None, scope: str | None, status: list[str] | None
) -> MemoryFilter:
    from dia_assets.platform.memory.retrieval import MemoryFilter

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


@memory_app.command("import-examples")
def import_examples(
    file: Annotated[
        Path, typer.Argument(exists=True, dir_okay=False, help="JSONL of question/sql pairs")
    ],
    scope: Annotated[str, typer.Option(help="scope for rows without `scope`/`db_id`")] = "",
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
) -> None:
    """Load question/SQL pairs (with optional column notes) as `example` items."""
    from dia_assets.agents.memory.examples import read_examples

    use_workspace(workspace)
    try:
        items = list(read_examples(file, default_scope=scope))
    except ValueError as err:
        fail(f"{file}: {err}", "fix that line of the JSONL file")
    with _open() as store:
        report = store.import_examples(items)
    if as_json:
        echo_json({"read": report.read, "inserted": report.inserted, "duplicates": report.duplicates,
                   "seconds": report.seconds})
        return
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
    workspace: WorkspaceOpt = None,
) -> None:
    """List items (active by default), oldest first."""
    use_workspace(workspace)
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
def show(item_id: int, as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """One item in full: rule or SQL, probe, evidence, versions and events (exit 1 if there is none)."""
    use_workspace(workspace)
    with _open() as store:
        try:
            item = store.get(item_id)
        except KeyError:
            fail(f"no memory item #{item_id}", "see the ids with `dia memory list` (--status archived for archived ones)")
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
    workspace: WorkspaceOpt = None,
) -> None:
    """Hybrid retrieval: references with their fused score (pull bodies with `show`)."""
    use_workspace(workspace)
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
        Path | None, typer.Option("--output", "-o", "--out",
                                  help="default <workspace>/memory/lessons.md (`--out` is the old spelling)")
    ] = None,
    workspace: WorkspaceOpt = None,
) -> None:
    """Write lessons.md for expert review."""
    from dia_assets.agents.memory.export import export_lessons

    path = out or Workspace(use_workspace(workspace)).lessons
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
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = None,
) -> None:
    """Archive items by id, delete them with --hard, or apply the forgetting policy with --auto.

    Exit 1 when an id names no item (as `dia memory show` does); the others are still done."""
    if not ids and not auto:
        fail("give item ids or --auto", code=EXIT_USAGE)
    use_workspace(workspace)
    policy: list[dict[str, object]] = []
    done: list[int] = []
    with _open() as store:
        if auto:
            from dia_assets.agents.memory.maintenance import forget as forget_policy

            policy = [{"id": c.item_id, "reason": c.reason} for c in forget_policy(store)]
        if ids:
            done = list(store.delete(ids) if hard else store.set_status(ids, Status.ARCHIVED, "cli request"))
        # not changed: absent, or (archiving) archived already, which is no error
        missing = [i for i in dict.fromkeys(ids or []) if i not in set(done) and (hard or not _exists(store, i))]
    action = "deleted" if hard else "archived"
    if as_json:
        echo_json({"policy_archived": policy, action: done, "missing": missing})
    else:
        for change in policy:
            typer.echo(f"archived #{change['id']}: {change['reason']}")
        if ids:
            typer.echo(f"{action} {len(done)}: {' '.join(f'#{i}' for i in done)}")
    if missing:
        fail(f"no memory item {' '.join(f'#{i}' for i in missing)}",
             "see the ids with `dia memory list` (--status archived for archived ones)")


def _exists(store: MemoryStore, item_id: int) -> bool:
    try:
        store.get(item_id)
    except KeyError:
        return False
    return True


@memory_app.command("maintain")
def maintain(as_json: JsonOpt = False, workspace: WorkspaceOpt = None) -> None:
    """Consolidate, promote and forget now (what the `memory_lessons` asset does)."""
    from dia_assets.agents.memory.maintenance import run_maintenance

    use_workspace(workspace)
    with _open() as store:
        report = run_maintenance(store)
    if as_json:
        echo_json({"changes": [{"action": c.action, "id": c.item_id, "into": c.into_id, "reason": c.reason}
                               for c in report.changes], "counts": report.counts})
        return
    for c in report.changes:
        typer.echo(
            f"{c.action} #{c.item_id}{f' into #{c.into_id}' if c.into_id else ''}: {c.reason}"
        )
    typer.echo(json.dumps(report.counts))
