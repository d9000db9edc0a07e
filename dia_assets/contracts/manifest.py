"""The schema manifest contract (DESIGN §5): what the Schema Creator plans and loads.

Written to `schema/manifest.json`; the loader, the validator and the Dagster glue all
read this one model.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from dia_assets.contracts.artifact import Artifact
from dia_assets.contracts.interpretation import ValueFormat

# 2: a table may load several files (`ManifestTable.source_files`); `questions` block acceptance.
# 3: records counted from the files' bytes (`source_records`, `ManifestFile.records`); a wide keyed
#    table split into parts (`split_of`, `part`, `parts`).
MANIFEST_VERSION = 3


class ManifestColumn(BaseModel):
    name: str = Field(description="Column name in the refined table.")
    type: str = Field(description="SQL type (DuckDB spelling; transpiled for other dialects).")
    nullable: bool = True
    source: str = Field(description="Interpretation source the column comes from.")
    source_column: str = Field(description="Column name in the staging table (snake case).")
    original_name: str | None = Field(None, description="Header as written in the file.")
    renamed_from: str | None = None
    semantic_type: str = "unknown"
    value_format: ValueFormat = ValueFormat()
    category_map: dict[str, str] = Field(default_factory=dict, description="Raw spelling -> canonical.")
    blank_as_null: bool = False
    on_error: Literal["reject_row", "null_value"] = Field(
        "reject_row", description="Unparseable value: reject the row, or keep it with NULL (raw value kept in rejects).")
    normalizations: list[str] = Field(default_factory=list, description="Value-changing steps applied, with evidence.")


class ExcludedColumn(BaseModel):
    source_column: str
    reason: str


class UnreadableSource(BaseModel):
    """A file the interpreter could not read: none of its records reach the warehouse."""

    name: str
    source_path: str
    reason: str


class ManifestForeignKey(BaseModel):
    columns: list[str]
    ref_table: str
    ref_columns: list[str]
    confidence: float = 1.0
    origin: Literal["interpreter", "override", "previous"] = "interpreter"
    allow_orphans: bool = False
    orphan_reason: str | None = None
    expected_orphans: int = 0
    blocking: bool = Field(True, description="Orphans fail acceptance: declared, override or strong "
                           "evidence. A weakly inferred key with orphans is reported for review instead.")
    enforced: bool = Field(False, description="Declared as a database constraint.")
    not_enforced_reason: str | None = None


class ManifestFile(BaseModel):
    """One of the files a table is the union of."""

    path: str = Field(description="Raw file, relative to the data folder.")
    ref: str = Field(description="File plus sheet, as written to _source_file.")
    format: str
    content_hash: str
    rows: int = Field(0, description="Rows the interpreter read from this file.")
    bad_rows: int = 0
    records: int | None = Field(None, description="Data records counted from the file's bytes (delimited files).")
    columns: list[str] = Field(default_factory=list, description="The file's own columns; others are NULL in its rows.")


class OpenQuestion(BaseModel):
    """Files that may be one table, not decided by the expert: the build is not accepted until
    `files: union` or `files: separate` is set for `name` in the overrides."""

    name: str
    files: list[str]
    tables: list[str] = Field(description="The tables the files are loaded into meanwhile.")
    message: str


class ManifestTable(BaseModel):
    name: str
    sources: list[str]
    source_path: str = Field(description="Raw file, relative to the data folder.")
    source_ref: str = Field("", description="File plus sheet or JSON path, as written to _source_file.")
    source_format: str
    source_files: list[ManifestFile] = Field(
        default_factory=list, description="Every file of a table loaded from several (a union), in load order; "
        "empty for one file. `source_path`, `source_ref` and `source_format` are then the first file's.")
    reader_stem: str = Field("", description="Name the reader gives the file's main source.")
    content_hash: str
    source_rows: int = Field(0, description="Rows the interpreter read (duplicates included).")
    bad_rows: int = Field(0, description="Unparseable lines the interpreter found.")
    source_records: int | None = Field(None, description="Data records in the file(s), counted from their bytes "
                                       "apart from any reader: staged rows + unparseable lines must equal it "
                                       "(records_lost). None: not a delimited file.")
    split_of: str | None = Field(None, description="A part of a wide table: the name of its first part, which "
                                 "every part joins 1:1 on the primary key (docs: wide-table layout).")
    part: int = Field(1, description="1 for the first part (named as the table), 2 for <table>__part2, ...")
    parts: list[str] = Field(default_factory=list, description="On the first part of a split table: every "
                             "part's name, in order, itself first.")
    source_columns: list[str] = Field(default_factory=list, description="Every source column, in file order (staging).")
    columns: list[ManifestColumn] = []
    excluded_columns: list[ExcludedColumn] = []
    primary_key: list[str] = []
    primary_key_origin: Literal["interpreter", "override", "previous", "none"] = Field(
        "none", description="previous: kept from the previous build's manifest although the interpreter "
        "now proposes another key (keys change only by an expert's or a recorded drift decision).")
    primary_key_enforced: bool = False
    foreign_keys: list[ManifestForeignKey] = []
    constraints: list[str] = []
    dedup: Literal["exact_rows", "none"] = "exact_rows"
    max_reject_fraction: float = 0.05
    staging_table: str
    reject_table: str
    blocking_issues: list[str] = Field(default_factory=list, description=(
        "The interpreter's blocking issues about this table's records (a record cut short, a formula "
        "without a value, a JSON key given twice): load_integrity fails while any stands."))

    def column(self, name: str) -> ManifestColumn:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(f"{self.name} has no column {name!r}")

    def files(self) -> list[ManifestFile]:
        """Every file the table loads: `source_files`, or its one file."""
        return self.source_files or [ManifestFile(
            path=self.source_path, ref=self.source_ref or self.source_path, format=self.source_format,
            content_hash=self.content_hash, rows=self.source_rows, bad_rows=self.bad_rows,
            records=self.source_records, columns=list(self.source_columns))]

    def files_label(self) -> str:
        """The table's file(s), for messages: `a.csv` or `a.csv + b.json`."""
        return " + ".join(f.ref for f in self.files())


class StaleOverride(BaseModel):
    """An active override naming a table or column the data no longer has: ignored and reported."""

    where: str = Field(description="Dotted path in the overrides file, e.g. tables.customers.columns.phone.")
    line: int | None = None
    reason: str


class Decision(BaseModel):
    """One planning decision, so reviewers see what was applied and why."""

    table: str
    column: str | None = None
    what: str
    origin: Literal["interpreter", "override", "previous", "drift"] = "interpreter"


class Manifest(Artifact):
    version: int = MANIFEST_VERSION
    dialect: str = "duckdb"
    generated_at: str
    data_dir: str
    interpretation_generated_at: str | None = None
    overrides_path: str | None = None
    tables: list[ManifestTable] = []
    skipped_sources: list[ExcludedColumn] = Field(
        default_factory=list, description="Sources not loaded (source name in source_column) and why."
    )
    unreadable_sources: list[UnreadableSource] = Field(
        default_factory=list,
        description="Files that could not be read (not excluded by the expert): validation counts their "
        "records from the raw file and fails row-count reconciliation when any are lost.",
    )
    decisions: list[Decision] = []
    stale_overrides: list[StaleOverride] = Field(
        default_factory=list, description="Active overrides that name what the data no longer has.")
    questions: list[OpenQuestion] = Field(
        default_factory=list, description="Files that may be one table, awaiting the expert's decision: "
        "no build is accepted until each is decided.")

    def table(self, name: str) -> ManifestTable:
        for tbl in self.tables:
            if tbl.name == name:
                return tbl
        raise KeyError(f"no table {name!r} in the manifest")



