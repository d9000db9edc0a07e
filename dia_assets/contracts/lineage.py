"""The lineage contract: which answers read which warehouse columns, and where each refined
column comes from (file, source column, parse, row range). Written to `lineage/lineage.json`
by `dia lineage` and the `lineage_report` asset; read by both."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from dia_assets.contracts.artifact import Artifact

LINEAGE_VERSION = 1


class AnswerReads(BaseModel):
    """One saved answer (`queries/<id>/result.json`) and what its SQL read."""

    question_id: str
    question: str
    status: str
    sql: str | None = None
    dialect: str = "duckdb"
    reads: dict[str, list[str]] = Field(default_factory=dict, description="table -> columns the SQL read "
                                        "anywhere (select, join, filter, grouping, order).")
    outputs: dict[str, list[str]] = Field(default_factory=dict, description="result column -> table.column.")
    path: str = Field("", description="The answer's folder.")

    def reads_column(self, table: str, column: str | None = None) -> bool:
        cols = self.reads.get(table.lower())
        return cols is not None and (column is None or column.lower() in cols)


class RowRange(BaseModel):
    """Rows of the file (the loader's `_source_row`, 1-based data records) behind a table."""

    first: int | None = None
    last: int | None = None
    rows: int = Field(0, description="Staged records in the range.")


class ColumnOrigin(BaseModel):
    table: str
    column: str
    type: str
    source_column: str = Field(description="Staging column (snake case of the file's header).")
    original_name: str | None = Field(None, description="Header as written in the file.")
    value_format: dict[str, Any] = Field(default_factory=dict, description="How the text was parsed.")
    normalizations: list[str] = Field(default_factory=list)
    category_map: dict[str, str] = Field(default_factory=dict)


class TableOrigin(BaseModel):
    table: str
    source: str = Field(description="Interpretation source.")
    source_path: str = Field(description="File, relative to the data folder.")
    source_ref: str = Field(description="File plus sheet or JSON path, as in staging._source_file.")
    source_format: str
    content_hash: str
    parse: dict[str, Any] = Field(default_factory=dict, description="How the file was read (interpretation).")
    staging_table: str
    reject_table: str
    row_range: RowRange | None = Field(None, description="Measured on the warehouse; None when unavailable.")
    columns: list[ColumnOrigin] = []

    def column(self, name: str) -> ColumnOrigin | None:
        return next((c for c in self.columns if c.column.lower() == name.lower()), None)


class ValueOrigin(BaseModel):
    """Where one value of a refined column came from: the staged records whose text parses to it."""

    table: str
    column: str
    value: str
    source_ref: str
    rows: int = 0
    row_range: RowRange = RowRange()
    row_numbers: list[int] = Field(default_factory=list, description="Up to 20 `_source_row` numbers.")
    raw_texts: list[str] = Field(default_factory=list, description="Distinct raw texts in the file (up to 5).")


class LineageIndex(Artifact):
    version: int = LINEAGE_VERSION
    generated_at: str
    warehouse: str = ""
    tables: list[TableOrigin] = []
    answers: list[AnswerReads] = []

    def table(self, name: str) -> TableOrigin | None:
        return next((t for t in self.tables if t.table.lower() == name.lower()), None)

    def readers(self, table: str, column: str | None = None) -> list[AnswerReads]:
        """The answers whose SQL read the table (or that column of it)."""
        return [a for a in self.answers if a.reads_column(table, column)]
