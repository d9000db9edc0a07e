"""Raw files as one observable source asset partitioned by file, and the `interpretation` asset.

The files are partitions of a dynamic partitions definition, so the asset graph follows
the data folder without a restart: `new_data_sensor` adds a partition for a new file and
deletes the partition of a deleted one (code locations are loaded once, so one asset per
file would keep a deleted file's asset until the next reload)."""


from pathlib import Path

from dagster import (
    AssetExecutionContext,
    AssetKey,
    DataVersion,
    DataVersionsByPartition,
    DynamicPartitionsDefinition,
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
from dia_assets.agents.schema_creator.build import previous_interpretation
from resources import LLMResource, WorkspaceResource
from resources.workspace import default_data_dir

RAW_GROUP = "raw_files"
RAW_FILES = AssetKey("raw_files")
raw_partitions = DynamicPartitionsDefinition(name="raw_files")


def raw_partition_key(path: Path, root: Path | None = None) -> str:
    """The partition of a file: `names.raw_key_name` of its path in the data folder."""
    rel = path.relative_to(root).as_posix() if root is not None else path.name
    return raw_key_name(rel)


def raw_file_key(path: Path, root: Path | None = None) -> AssetKey:  # noqa: ARG001 - one asset for every file
    """The asset every raw file is a partition of (column lineage points here)."""
    return RAW_FILES


def folder_partitions(data_dir: str | Path | None = None) -> dict[str, Path]:
    """Partition key -> file, for every data file now in the folder."""
    root = Path(data_dir or default_data_dir())
    if not root.is_dir():
        return {}
    return {raw_partition_key(raw.path, root): raw.path for raw in discover(root)}


def observe_folder(data_dir: str | Path | None = None, known: set[str] | None = None) -> DataVersionsByPartition:
    """Each file's content hash as the data version of its partition (`known`: registered ones)."""
    return DataVersionsByPartition({
        key: DataVersion(content_hash(path)) for key, path in folder_partitions(data_dir).items()
        if known is None or key in known
    })


def raw_file_assets(data_dir: str | None = None) -> list:
    """The `raw_files` observable source asset (a list, for the definitions' splat)."""

    @observable_source_asset(
        key=RAW_FILES, group_name=RAW_GROUP, partitions_def=raw_partitions,
        description="Raw files in DIA_DATA_DIR, one partition per file (added and retired by new_data_sensor); "
        "the data version of a partition is the file's content hash.",
    )
    def raw_files(context) -> DataVersionsByPartition:  # noqa: ANN001
        return observe_folder(data_dir, set(context.instance.get_dynamic_partitions(raw_partitions.name)))

    return [raw_files]


def interpretation_asset(raw_keys: list[AssetKey]):  # noqa: ANN201 - a Dagster asset definition
    """The `interpretation` asset, downstream of `raw_files` (every partition: every file now in the folder)."""

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
        progress=context.log.info, previous=previous_interpretation(workspace.root_path),
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
