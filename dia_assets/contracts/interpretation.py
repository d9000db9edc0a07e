"""The interpretation contract (DESIGN §5): what the Data Interpreter writes and the
Schema Creator reads. One model shared by writer and reader."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, Field

from dia_assets.contracts.artifact import Artifact

# 2: a source may be read from several files (`Source.files`), and `file_groups` says which
# files were taken for one table; a reader of version 1 would see only a union's first file.
INTERPRETATION_VERSION = 2

SemanticType = Literal[
    "id", "categorical", "boolean", "integer", "decimal", "currency", "percentage",
    "date", "timestamp", "time", "email", "phone", "url", "postal_code", "country",
    "latitude", "longitude", "free_text", "json", "unknown",
]
Severity = Literal["info", "warning", "error"]


class ParseInfo(BaseModel):
    """How a source was read, and what went wrong while reading it."""

    ok: bool = True
    delimiter: str | None = Field(None, description="Field terminator as found in the file (`,`, `+|`).")
    record_terminator: str | None = Field(None, description="Record terminator (`\\n`, `\\r\\n`, `&|\\n`).")
    quote: str | None = None
    header: bool = True
    header_row: int | None = Field(None, description="1-based row of the header (Excel).")
    encoding: str | None = None
    encoding_confidence: float | None = Field(
        None, ge=0, le=1, description="How sure the detection of a legacy (non-UTF-8) encoding is.")
    sheet: str | None = None
    json_path: str | None = Field(None, description="Nested array a child source came from.")
    bad_rows: int = 0
    records: int | None = Field(None, description="Data records in a delimited file, counted from its bytes "
                                "apart from the reader (record_count.py); rows + bad_rows must equal it.")
    bad_row_examples: list[str] = []
    errors: list[str] = []
    rewritten: bool = Field(False, description="Read through a streaming rewrite (terminators, encodings, NULs).")
    confidence: float = Field(1.0, ge=0, le=1, description="How sure the reader is of dialect and header.")


class ValueFormat(BaseModel):
    """Evidence the Schema Creator needs to parse a text column into its type."""

    date_formats: list[str] = []
    decimal_separator: str = "."
    thousands_separator: str | None = None
    currency_symbols: list[str] = []
    percent: bool = False
    true_values: list[str] = []
    false_values: list[str] = []
    null_tokens: list[str] = []
    trim: bool = False


class Column(BaseModel):
    name: str
    original_name: str
    physical_type: str
    semantic_type: SemanticType = "unknown"
    inferred_type: str = Field("VARCHAR", description="SQL type that preserves every value.")
    value_format: ValueFormat = ValueFormat()
    null_count: int = 0
    blank_count: int = Field(0, description="Empty or whitespace-only strings, not NULL.")
    null_token_count: int = Field(0, description="Values such as NA, null, - .")
    null_fraction: float = Field(0.0, description="(null + blank + null tokens) / rows.")
    distinct_count: int = 0
    distinct_approximate: bool = Field(False, description="HyperLogLog estimate (high-cardinality non-key columns).")
    unique: bool = False
    min: str | None = None
    max: str | None = None
    mean: float | None = None
    max_length: int | None = None
    quantiles: list[float] = Field([], description=(
        "Deciles of numeric values, for drift checks: the value at position floor(q * (n - 1)) in sorted "
        "order, exact (a column of over 1,000,000 rows whose values do not repeat: over about 1,000,000 of "
        "its rows, picked by row position)."))
    unparseable_count: int = Field(0, description="Non-null values the inferred type rejects.")
    unparseable_examples: list[str] = []
    top_values: list[tuple[str | None, int]] = []
    patterns: list[tuple[str, int]] = []
    examples: list[str] = []
    description: str | None = None
    description_source: Literal["llm"] | None = None


class KeyCandidate(BaseModel):
    columns: list[str]
    confidence: float = Field(ge=0, le=1)
    reason: str
    llm_verdict: Literal["confirmed", "rejected"] | None = None
    source: Literal["inferred", "declared"] = "inferred"


class SourceRef(BaseModel):
    source: str
    columns: list[str]


class DeclaredColumn(BaseModel):
    name: str
    type: str | None = None
    computed: bool = Field(False, description="Computed (`AS (...)`): usually absent from data files.")


class DeclaredForeignKey(BaseModel):
    columns: list[str]
    ref_source: str = Field(description="Referenced table as the schema file names it.")
    ref_columns: list[str] = Field([], description="Empty: the referenced table's primary key.")


class DeclaredTable(BaseModel):
    """What a schema file beside the data (`.sql`: CREATE TABLE, COPY, BULK INSERT, LOAD DATA) says."""

    table: str
    schema_file: str
    columns: list[DeclaredColumn] = []
    primary_key: list[str] = []
    foreign_keys: list[DeclaredForeignKey] = []
    data_file: str | None = Field(None, description="File named by the load statement.")
    field_terminator: str | None = None
    record_terminator: str | None = None
    header: bool | None = None
    encoding: str | None = Field(None, description="Code page the load statement declares, as a Python codec "
                                 "name (CODEPAGE, CHARACTER SET, ENCODING).")


class RangePartition(BaseModel):
    """An observation: a file whose rows come in blocks by `period` of `column`, while `column`
    itself is not in order, may have been exported from a table range-partitioned on it. Row order
    never changes the primary key (it stays `unique_key`); the overrides may add `column` to it."""

    column: str
    period: Literal["year", "month", "day"]
    blocks: int = Field(description="Consecutive runs of one period down the file.")
    unique_key: list[str] = Field(description="The key that is unique on its own (the primary key); a partitioned "
                                  "source table would declare `column` in front of it.")


class FoundKeys(BaseModel):
    """The keys a source's own rows gave key inference, before foreign keys (link tables) and a
    schema file adjusted them: an unchanged file gets them back without being read again."""

    candidate_keys: list[KeyCandidate] = []
    primary_key: KeyCandidate | None = None
    range_partition: RangePartition | None = None


Format = Literal["csv", "json", "jsonl", "excel", "parquet"]


class SourceFile(BaseModel):
    """One of the files a source is the union of (`Source.files`)."""

    path: str
    format: Format
    sheet: str | None = Field(None, description="The workbook sheet the file's rows come from.")
    content_hash: str
    size_bytes: int
    row_count: int = 0
    bad_rows: int = 0
    records: int | None = Field(None, description="Data records counted from the file's bytes (delimited files).")
    columns: list[str] = Field([], description="The file's own columns (snake case): a column of the source "
                               "that a file lacks is NULL in that file's rows.")


class Source(BaseModel):
    name: str
    path: str
    format: Format
    content_hash: str
    size_bytes: int
    row_count: int = 0
    files: list[SourceFile] = Field([], description=(
        "The files of a source read from several (one table in batches or in several formats), in path order: "
        "the source is their union, each record keeping its file. Empty for a source of one file. With files, "
        "`path` and `format` are the first file's, `content_hash` a hash over every file's path and hash, "
        "`size_bytes` and `row_count` the totals."))
    parse: ParseInfo = ParseInfo()
    parent: SourceRef | None = Field(None, description="Parent key of a flattened child source.")
    declared: DeclaredTable | None = Field(None, description="The schema file's declaration of this source.")
    columns: list[Column] = []
    candidate_keys: list[KeyCandidate] = []
    primary_key: KeyCandidate | None = None
    duplicate_rows: int = 0
    range_partition: RangePartition | None = Field(
        None, description="Rows in blocks by a date column (see RangePartition): an observation, not a key.")
    found_keys: FoundKeys | None = Field(None, description="Keys from this source's rows alone (see FoundKeys).")
    description: str | None = None
    description_source: Literal["llm"] | None = None

    def column(self, name: str) -> Column:
        for col in self.columns:
            if col.name == name:
                return col
        raise KeyError(f"{self.name} has no column {name!r}")

    def file_list(self) -> list[SourceFile]:
        """Every file the source is read from: `files`, or its one file."""
        return self.files or [SourceFile(
            path=self.path, format=self.format, sheet=self.parse.sheet, content_hash=self.content_hash,
            size_bytes=self.size_bytes, row_count=self.row_count, bad_rows=self.parse.bad_rows,
            records=self.parse.records, columns=[c.name for c in self.columns])]


class FileGroup(BaseModel):
    """Files of one folder whose names say they may hold one table: the same name in several formats
    (`kinds.csv`, `kinds.json`), batches (`orders_2024_01.csv`, `orders_2024_02.csv`) or part files
    (`orders/part-0001.parquet`). How they were read, and why."""

    name: str = Field(description="The table they would form: the key of the expert's `files` decision in the "
                      "overrides, and the source's name when they are united.")
    files: list[str]
    sources: list[str] = Field(description="The sources they were read as: one when united.")
    status: Literal["united", "question", "separate"] = Field(description=(
        "united: one source, their union; question: read apart until the expert decides (the build is not "
        "accepted meanwhile); separate: separate sources, by the expert's decision or for lack of common columns."))
    reason: str


def undone_decisions(groups: list[FileGroup], decisions: Mapping[str, str]) -> list[str]:
    """The file groups whose `files` decision the interpretation was made without: only a new
    interpretation takes them (a `separate` for a question needs none: its files are apart already)."""
    applied = {"united": "union", "separate": "separate", "question": None}
    return [g.name for g in groups if (decided := decisions.get(g.name)) and decided != applied[g.status]
            and not (decided == "separate" and g.status == "question")]


class ForeignKey(BaseModel):
    from_: SourceRef = Field(alias="from")
    to: SourceRef
    coverage: float = Field(ge=0, le=1, description="Share of distinct child values found in the parent.")
    orphan_count: int = Field(0, description="Child rows whose value is missing in the parent.")
    orphan_examples: list[str] = []
    confidence: float = Field(ge=0, le=1)
    evidence: list[str] = []
    strength: Literal["strong", "weak"] = Field(
        "strong", description="strong: exact name, declared or structural evidence; weak: role, "
        "stem or propagated names. Only strong keys the data contradicts block acceptance.")
    llm_verdict: Literal["confirmed", "rejected"] | None = None
    source: Literal["inferred", "declared"] = "inferred"

    model_config = {"populate_by_name": True}


class JoinPath(BaseModel):
    sources: list[str]
    joins: list[str] = Field(description="SQL join conditions, in path order.")


class QualityIssue(BaseModel):
    source: str
    column: str | None = None
    kind: str
    severity: Severity = "warning"
    count: int = 0
    examples: list[str] = []
    message: str
    suggested_action: str
    blocking: bool = Field(False, description=(
        "A record of the file was lost or altered on the way in (a record cut short at the end of the "
        "file, a formula cell without a value, a JSON key given twice): no build is accepted while it "
        "stands. Copied to the manifest table (`blocking_issues`) and failed by load_integrity."))


class Interpretation(Artifact):
    version: int = INTERPRETATION_VERSION
    data_dir: str
    generated_at: str = Field(description=(
        "When it was made (UTC, to the second): the one field meant to differ between two interpretations "
        "of the same files (tests/test_deterministic.py)."))
    sources: list[Source] = []
    foreign_keys: list[ForeignKey] = []
    join_paths: list[JoinPath] = []
    quality_issues: list[QualityIssue] = []
    file_groups: list[FileGroup] = Field([], description="Files that may be one table, and how they were read.")
    llm_model: str | None = None

    def source(self, name: str) -> Source:
        for src in self.sources:
            if src.name == name:
                return src
        raise KeyError(f"no source {name!r}")


