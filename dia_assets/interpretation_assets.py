"""Raw files as observable source assets, and the `interpretation` asset."""


from pathlib import Path

from dagster import (
    AssetExecutionContext,
    AssetKey,
    DataVersion,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableSchema,
    asset,
    observable_source_asset,
)

from dia_assets.agents.interpreter.discover import content_hash, discover
from dia_assets.agents.interpreter.names import raw_key_name
from dia_assets.agents.interpreter.render import foreign_keys_table, sources_table
from dia_assets.agents.interpreter.run import interpret_to_files
from resources import LLMResource, WorkspaceResource
from resources.workspace import default_data_dir

RAW_GROUP = "raw_files"


def raw_file_key(path: Path, root: Path | None = None) -> AssetKey:
    """`raw/<name>`, distinct per file (names.raw_key_name)."""
    rel = path.relative_to(root).as_posix() if root is not None else path.name
    return AssetKey(["raw", raw_key_name(rel)])


def raw_file_assets(data_dir: str | None = None) -> list:
    """One observable source asset per file; its data version is the content hash."""
    root = Path(data_dir or default_data_dir())
    if not root.is_dir():
        return []
    specs = []
    for raw in discover(root):
        path = raw.path

        def observe(path: Path = path) -> DataVersion:
            return DataVersion(content_hash(path) if path.exists() else "missing")

        specs.append(observable_source_asset(
            key=raw_file_key(path, root), group_name=RAW_GROUP, name=None,
            description=f"Raw file {path.name}", metadata={"path": str(path)},
        )(observe))
    return specs


def interpretation_asset(raw_keys: list[AssetKey]):  # noqa: ANN201 - a Dagster asset definition
    """The `interpretation` asset, downstream of every raw file observed at load time."""

    @asset(
        name="interpretation", group_name="interpret", deps=raw_keys,
        description="Data Interpreter (DIA §3.3): profile every raw source into interpretation.json.",
    )
    def interpretation(
        context: AssetExecutionContext, workspace: WorkspaceResource, llm: LLMResource
    ) -> MaterializeResult:
        return _interpret(context, workspace, llm)

    return interpretation


def _interpret(context: AssetExecutionContext, workspace: WorkspaceResource, llm: LLMResource) -> MaterializeResult:
    json_path, md_path = workspace.path("interpretation.json"), workspace.path("interpretation.md")
    complete = (lambda messages: llm.complete(messages)[0]) if llm.enabled else None
    interp = interpret_to_files(
        workspace.data_path, json_path, md_path, complete=complete, model=llm.model,
        progress=context.log.info,
    )
    metadata: dict[str, object] = {
        "sources": len(interp.sources),
        "rows": sum(s.row_count for s in interp.sources),
        "foreign_keys": len(interp.foreign_keys),
        "quality_issues": len(interp.quality_issues),
        "artifact": MetadataValue.path(str(json_path)),
        "review_document": MetadataValue.path(str(md_path)),
        "sources_table": MetadataValue.md(sources_table(interp)),
        "foreign_keys_table": MetadataValue.md(foreign_keys_table(interp)),
        "row_counts": MetadataValue.json({s.name: s.row_count for s in interp.sources}),
        "content_hashes": MetadataValue.json({s.name: s.content_hash for s in interp.sources}),
    }
    for src in interp.sources:
        metadata[f"column_schema/{src.name}"] = TableSchema(columns=[
            TableColumn(name=c.name, type=c.inferred_type, description=c.description or c.semantic_type)
            for c in src.columns
        ])
    return MaterializeResult(metadata=metadata)
