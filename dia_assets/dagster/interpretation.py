"""Raw files as one external asset partitioned by file, and the `interpretation` asset.

The files are partitions of a dynamic partitions definition, so the asset graph follows
the data folder without a restart: `new_data_sensor` adds a partition for a new file and
deletes the partition of a deleted one (code locations are loaded once, so one asset per
file would keep a deleted file's asset until the next reload).

A file that lands in the folder is an asset materialized outside Dagster, so the sensor (and
`make demo`) *report a materialization* per new or changed file, with its path, size, sha256
and modification time, and its content hash as data version. Observations alone cannot fill
partitions: open-source Dagster counts only materializations in a partition's status
(dagster-io/dagster#15764), so an observable source asset read "Missing (4)" and "0% filled"
beside 4 observations. Dagster's staleness, though, reads an external asset's partition data
versions from observations (`CachingStaleStatusResolver._is_dep_updated`), so each report is a
materialization (status, metadata) plus an observation with the same data version and metadata
(what makes `interpretation` stale when a file's content changes)."""


import hashlib
import json
from pathlib import Path

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetMaterialization,
    AssetObservation,
    AssetsDefinition,
    AssetSpec,
    DagsterInstance,
    DataVersion,
    DataVersionsByPartition,
    DynamicPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    TableColumn,
    TableSchema,
    asset,
)

from dia_assets.agents.adaptation.folder_index import Listed
from dia_assets.agents.interpreter.names import raw_key_name
from dia_assets.agents.locations import default_warehouse
from dia_assets.dagster.resources import LLMResource, WorkspaceResource
from dia_assets.dagster.resources.workspace import default_data_dir
from dia_assets.dagster.run_writer import run_writer
from dia_assets.platform.files.discover import content_hash, discover
from dia_assets.platform.files.object_store import is_url, local_copy

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
    """Partition key -> file, for every data file now in the folder (an s3:// folder: in its
    mirror, synced first)."""
    root = local_copy(data_dir or default_data_dir())
    if not root.is_dir():
        return {}
    return {raw_partition_key(raw.path, root): raw.path for raw in discover(root)}


def observe_folder(data_dir: str | Path | None = None, known: set[str] | None = None) -> DataVersionsByPartition:
    """Each file's content hash as the data version of its partition (`known`: registered ones)."""
    return DataVersionsByPartition({
        key: DataVersion(content_hash(path)) for key, path in folder_partitions(data_dir).items()
        if known is None or key in known
    })


# The tags a step's own `data_version` becomes (dagster/_core/definitions/data_version.py): a
# materialization reported from a sensor or `make demo` then carries the partition's data version
# exactly as if a run had produced the file.
DATA_VERSION_TAG = "dagster/data_version"
USER_PROVIDED_TAG = "dagster/data_version_is_user_provided"


def file_metadata(path: Path, digest: str) -> dict:
    """What a raw file's event shows: where it is, how big, its hash, when it last changed."""
    stat = path.stat()
    return {"path": MetadataValue.path(str(path.resolve())), "size_bytes": MetadataValue.int(stat.st_size),
            "sha256": MetadataValue.text(digest), "modified": MetadataValue.timestamp(stat.st_mtime)}


def raw_file_events(data_dir: str | Path | None = None,
                    only: set[str] | None = None) -> list[AssetMaterialization | AssetObservation]:
    """Per file (or per partition in `only`), a materialization and an observation (see the
    module docstring): data version = content hash, metadata = path, size, sha256, mtime."""
    events: list[AssetMaterialization | AssetObservation] = []
    for key, path in sorted(folder_partitions(data_dir).items()):
        if only is not None and key not in only:
            continue
        events.extend(raw_events(key, path, content_hash(path)))
    return events


def object_metadata(url: str, digest: str, listed: Listed) -> dict:
    """What an object's event shows: its URL, size, hash and ETag (as the sensor listed it)."""
    return {"path": MetadataValue.url(url), "size_bytes": MetadataValue.int(listed.size),
            "sha256": MetadataValue.text(digest), "etag": MetadataValue.text(listed.version)}


def raw_events(key: str, path: Path | str, digest: str,
               listed: Listed | None = None) -> list[AssetMaterialization | AssetObservation]:
    """A file's observation and materialization, for a content hash known already (the sensor's
    index): data version = `digest`, metadata = path, size, sha256, mtime (an object in an
    s3:// folder: its URL and the listing's size and ETag)."""
    meta = object_metadata(str(path), digest, listed) if listed is not None and is_url(path) else file_metadata(Path(path), digest)
    tags = {DATA_VERSION_TAG: digest, USER_PROVIDED_TAG: "true"}
    # observation first: a run's provenance keeps the latest event of either kind as its
    # input cursor, and only an observation after that cursor counts as a new data version
    return [AssetObservation(asset_key=RAW_FILES, partition=key, metadata=meta, tags=tags),
            AssetMaterialization(asset_key=RAW_FILES, partition=key, metadata=meta, tags=tags)]


def latest_raw_version(instance: DagsterInstance, key: str) -> str | None:
    """The content hash last reported for a partition (None: never reported)."""
    record = instance.get_latest_data_version_record(RAW_FILES, is_source=False, partition_key=key)
    event = record.asset_materialization if record else None
    return (event.tags or {}).get(DATA_VERSION_TAG) if event else None


def latest_raw_versions(instance: DagsterInstance, keys: set[str], batch: int = 500) -> dict[str, str | None]:
    """`latest_raw_version` of many partitions at once: the latest materialization's storage id
    per partition in one query, then those records `batch` at a time. One by one, a first tick
    over 100,000 files made 100,000 queries (4-10 ms each here: minutes, past the sensor timeout)."""
    from dagster import AssetRecordsFilter, DagsterEventType

    latest = instance.get_latest_storage_id_by_partition(
        RAW_FILES, DagsterEventType.ASSET_MATERIALIZATION, set(keys) if len(keys) <= batch else None)
    ids = sorted(latest[key] for key in keys if key in latest)
    out: dict[str, str | None] = dict.fromkeys(keys)
    for start in range(0, len(ids), batch):
        chunk = ids[start:start + batch]
        records = instance.fetch_materializations(AssetRecordsFilter(asset_key=RAW_FILES, storage_ids=chunk),
                                                  limit=len(chunk)).records
        for record in records:
            event = record.asset_materialization
            if event is not None and event.partition in out:
                out[event.partition] = (event.tags or {}).get(DATA_VERSION_TAG)
    return out


def record_raw_files(instance: DagsterInstance, data_dir: str | Path | None = None) -> int:
    """Register a partition per file and report its materialization (content hash, path, size)
    before a build, as `new_data_sensor` does, so the build's inputs have data versions;
    returns the file count."""
    keys = sorted(folder_partitions(data_dir))
    missing = sorted(set(keys) - set(instance.get_dynamic_partitions(raw_partitions.name)))
    if missing:
        instance.add_dynamic_partitions(raw_partitions.name, missing)
    for event in raw_file_events(data_dir):
        instance.report_runless_asset_event(event)
    return len(keys)


def raw_file_assets(data_dir: str | None = None) -> list[AssetsDefinition]:  # noqa: ARG001 - read by the reporters
    """The `raw_files` external asset (a list, for the definitions' splat): Dagster does not
    run it; the sensor and `make demo` report each file's materialization."""
    return [AssetsDefinition(specs=[AssetSpec(
        key=RAW_FILES, group_name=RAW_GROUP, partitions_def=raw_partitions, kinds={"file"},
        description="The raw data files in the data folder (DIA_DATA_DIR), one partition per file, written outside "
        "Dagster. new_data_sensor adds and retires partitions as files come and go and reports a materialization "
        "whenever a file is new or changed: its data version is the content hash (sha256), its metadata the path, "
        "size and modification time. A missing partition is a file never reported.",
    )])]


def interpretation_asset(raw_keys: list[AssetKey]):  # noqa: ANN201 - a Dagster asset definition
    """The `interpretation` asset, downstream of `raw_files` (every partition: every file now in the folder)."""

    @asset(
        name="interpretation", group_name="interpret", deps=raw_keys, code_version="1",
        description="What the raw files contain (interpretation.json and the review document interpretation.md): "
        "every source's columns, types, value formats, profile, primary and foreign keys, and quality issues.",
    )
    def interpretation(
        context: AssetExecutionContext, workspace: WorkspaceResource, llm: LLMResource
    ) -> MaterializeResult:
        # the first step of a build attempt: holds the workspace; a failure leaves the state STALE
        with run_writer(context, workspace.root_path, "interpret", default_warehouse(workspace.root_path)):
            return _interpret(context, workspace, llm)

    return interpretation


def _interpret(context: AssetExecutionContext, workspace: WorkspaceResource, llm: LLMResource) -> MaterializeResult:
    # the interpreter and the Schema Creator are imported by the step that uses them, not by
    # every run worker (a question's run too) when it loads the code location
    from dia_assets.agents.interpreter.render import (
        foreign_keys_table,
        quality_issues_table,
        sources_table,
    )
    from dia_assets.agents.interpreter.run import interpret_to_files
    from dia_assets.agents.schema_creator.build import expert_files, previous_interpretation

    json_path, md_path = workspace.tree.interpretation, workspace.tree.interpretation_md
    complete = (lambda messages: llm.complete(messages)[0]) if llm.enabled else None
    interp = interpret_to_files(
        workspace.data_path, json_path, md_path, complete=complete, model=llm.model,
        progress=context.log.info, previous=previous_interpretation(workspace.root_path),
        decisions=expert_files(workspace.root_path),
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
        "quality_issues_table": MetadataValue.md(quality_issues_table(interp)),
    }
    for src in interp.sources:
        metadata[f"column_schema/{src.name}"] = TableSchema(columns=[
            TableColumn(name=c.name, type=c.inferred_type, description=c.description or c.semantic_type)
            for c in src.columns
        ])
    # the data version follows the files, so an identical rebuild is not new data downstream
    files = sorted({(f.path, f.content_hash) for s in interp.sources for f in s.file_list()})
    version = hashlib.sha256(json.dumps(files).encode()).hexdigest()[:16]
    return MaterializeResult(metadata=metadata, data_version=DataVersion(version))
