"""`memory_lessons`: consolidate, promote and forget lessons, then export them for review."""

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    MaterializeResult,
    MetadataValue,
    asset,
)

from dia_assets.dagster.resources.memory import MemoryResource
from dia_assets.dagster.resources.workspace import WorkspaceResource

if TYPE_CHECKING:  # the store and its maintenance are imported when the step runs
    from dia_assets.platform.memory.models import MaintenanceReport


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def _counts_table(counts: dict[str, dict[str, int]]) -> str:
    """Lessons per tier and kind; every row has as many cells as the header (no kinds yet
    used to leave an empty header cell the separator did not count)."""
    kinds = sorted({k for per_tier in counts.values() for k in per_tier})
    header = ["tier", *kinds, "total"]
    lines = [_row(header), _row(["---"] + ["---:"] * (len(header) - 1))]
    for tier in ("example", "session", "cross_session"):
        row = counts.get(tier, {})
        lines.append(_row([tier, *(str(row.get(k, 0)) for k in kinds), str(sum(row.values()))]))
    return "\n".join(lines)


def _changes_md(report: "MaintenanceReport") -> str:
    if not report.changes:
        return "No changes."
    return "\n".join(
        f"- {c.action} #{c.item_id}"
        + (f" into #{c.into_id}" if c.into_id else "")
        + f": {c.reason}"
        for c in report.changes
    )


def memory_lessons_asset(
    deps: Sequence[str | AssetKey | AssetsDefinition] = (),
) -> AssetsDefinition:
    """Build the asset; pass `deps=["query_result"]` once answers feed lessons (DESIGN §3)."""

    @asset(
        name="memory_lessons",
        group_name="memory",
        deps=list(deps),
        description="The lessons the agents share (what worked and what to avoid when writing SQL), kept "
        "tidy: near-duplicates merged, lessons borne out on a second database or by repeated success promoted, "
        "stale ones archived; exported to memory/lessons.md for an expert to review.",
    )
    def _memory_lessons(
        context: AssetExecutionContext, memory: MemoryResource, workspace: WorkspaceResource
    ) -> MaterializeResult:
        store = memory.store()
        before = store.counts()
        from dia_assets.agents.memory.export import export_lessons
        from dia_assets.agents.memory.maintenance import run_maintenance

        report = run_maintenance(store)
        path = export_lessons(store, workspace.tree.lessons)
        context.log.info(f"memory: {len(report.changes)} changes; lessons exported to {path}")
        return MaterializeResult(
            metadata={
                "counts": MetadataValue.md(_counts_table(report.counts)),
                "counts_json": MetadataValue.json(report.counts),
                "counts_before_json": MetadataValue.json(before),
                "status_counts": MetadataValue.json(store.status_counts()),
                "merged": report.count("merged"),
                "promoted": report.count("promoted"),
                "archived": report.count("archived"),
                "changes": MetadataValue.md(_changes_md(report)),
                "lessons_path": MetadataValue.path(str(path)),
                "store": store.describe(),
                "dagster/row_count": sum(sum(v.values()) for v in report.counts.values()),
            }
        )

    return _memory_lessons


memory_lessons = memory_lessons_asset()
