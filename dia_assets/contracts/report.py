"""The validation report contract (DESIGN §5): four axes plus test queries."""

from __future__ import annotations

from pydantic import BaseModel, Field

from dia_assets.contracts.artifact import Artifact
from dia_assets.contracts.attempt import BuildAttempt
from dia_assets.contracts.manifest import StaleOverride

REPORT_VERSION = 2  # 2: installed_build and last_attempt


class FileRowCounts(BaseModel):
    """One file's share of a table loaded from several files."""

    file: str = Field(description="As written to _source_file.")
    interpreted_rows: int
    staged: int
    unparsed_lines: int = 0
    rejected: int = 0
    duplicates_removed: int = Field(0, description="Exact copies of a row of an earlier file or row.")
    refined: int = 0
    passed: bool = True
    message: str = ""


class TableRowCounts(BaseModel):
    table: str
    source_rows: int = Field(description="Rows in the file: staged + unparseable lines.")
    interpreted_rows: int = Field(description="Rows plus bad lines the interpreter counted.")
    staged: int
    refined: int
    rejected: int = Field(description="Rows routed to rejects after staging (cast failures).")
    unparsed_lines: int = Field(0, description="Lines that never reached staging (also in rejects).")
    duplicates_removed: int = 0
    files: list[FileRowCounts] = Field(default_factory=list, description="Per file, for a table of several files.")
    passed: bool = True
    message: str = ""


class ColumnCoverage(BaseModel):
    table: str
    carried: list[str] = []
    renamed: dict[str, str] = Field(default_factory=dict, description="source column -> refined column")
    excluded: dict[str, str] = Field(default_factory=dict, description="source column -> reason")
    missing: list[str] = Field(default_factory=list, description="Source columns with no trace.")
    passed: bool = True


class KeyResult(BaseModel):
    table: str
    kind: str = Field(description="primary_key or foreign_key")
    columns: list[str]
    ref_table: str | None = None
    ref_columns: list[str] = []
    duplicate_keys: int = 0
    null_keys: int = 0
    orphan_rows: int = 0
    allowed: bool = False
    reason: str | None = None
    examples: list[str] = []
    passed: bool = True
    blocking: bool = Field(True, description="A failure here fails acceptance; false for weakly "
                           "inferred keys, whose violations are findings for review.")


class TableRejects(BaseModel):
    table: str
    rejected: int
    reject_fraction: float
    max_reject_fraction: float
    values_nulled: int = Field(0, description="Rows kept with unparseable values set to NULL (on_error: null_value).")
    reasons: dict[str, int] = Field(default_factory=dict)
    examples: list[str] = []
    passed: bool = True
    message: str = ""


class TestQuery(BaseModel):
    name: str
    sql: str
    expected: int
    actual: int | None = None
    error: str | None = None
    passed: bool = True


class AxisResult(BaseModel):
    passed: bool
    summary: str


class RetiredTable(BaseModel):
    """A table of the previous build whose source is gone: dropped with its staging and rejects."""

    table: str
    source_path: str
    reason: str


class ReloadRecord(BaseModel):
    """How this build reached the warehouse: everything loaded, or only what changed."""

    mode: str = Field(description="full, incremental (unchanged tables copied from the previous build), or "
                      "subset (only the tables selected, with those that must be rebuilt with them).")
    reloaded: list[str] = Field(default_factory=list, description="Tables loaded from their files.")
    kept: list[str] = Field(default_factory=list, description="Tables carried over untouched.")
    revalidated: list[str] = Field(default_factory=list, description="Tables whose checks ran on this build "
                                   "(the reloaded ones and those with keys pointing at them).")
    retired: list[RetiredTable] = Field(default_factory=list)
    reasons: dict[str, str] = Field(default_factory=dict, description="table -> why it was reloaded.")
    fallback: str | None = Field(None, description="Why an incremental reload was asked for but a full build ran.")


class InstalledBuild(BaseModel):
    """The warehouse in place, whichever build the rest of the report describes (a build that
    was not accepted is described, but the earlier one stays installed)."""

    warehouse: str
    validated_at: str = Field(description="When the build in place was validated (its report's generated_at).")
    accepted: bool
    warehouse_hash: str | None = None
    warehouse_identity: str | None = None
    rows: dict[str, int] = Field(default_factory=dict, description="Refined rows per table.")


class ValidationReport(Artifact):
    version: int = REPORT_VERSION
    generated_at: str
    warehouse: str
    dialect: str = "duckdb"
    accepted: bool = False
    installed: bool = Field(True, description="The build this report describes is the warehouse in place. "
                            "False: it was not accepted and the previous warehouse was kept.")
    rejected_build: str | None = Field(None, description="Where a build that was not installed was kept.")
    warehouse_hash: str | None = Field(None, description="blake2b of the DuckDB file this report describes.")
    warehouse_identity: str | None = Field(None, description="inode-size-mtime of that file: a cheap "
                                           "check that the report still describes the file in place.")
    row_counts: list[TableRowCounts] = []
    column_coverage: list[ColumnCoverage] = []
    key_validity: list[KeyResult] = []
    load_integrity: list[TableRejects] = []
    test_queries: list[TestQuery] = []
    axes: dict[str, AxisResult] = Field(default_factory=dict)
    planted_problems: list[str] = Field(default_factory=list, description="What the load did about each quality issue.")
    stale_overrides: list[StaleOverride] = Field(
        default_factory=list, description="Overrides naming a table or column the data no longer has (ignored).")
    open_questions: list[str] = Field(
        default_factory=list, description="Files that may be one table, awaiting the expert's `files` decision: "
        "their tables fail row-count reconciliation until then.")
    reload: ReloadRecord | None = Field(None, description="Full or incremental build, and retired tables.")
    stale_reason: str | None = Field(
        None, description="Set when a later build failed: the warehouse in place does not match the current "
        "data, so nothing is accepted until a build succeeds.")
    installed_build: InstalledBuild | None = Field(None, description="The warehouse in place (None: nothing "
                                                   "installed yet).")
    last_attempt: BuildAttempt | None = Field(None, description="The last build attempt, finished or not.")



