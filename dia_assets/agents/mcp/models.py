"""The typed results of DIA's MCP tools: each is a tool's output schema (`outputSchema`), so a
host knows the shape before it calls and gets numbers as JSON numbers (DECIMAL as a number,
dates and timestamps as ISO text: `agents/jsonable.py`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# one result cell as JSON: numbers stay numbers; LIST and STRUCT values stay lists and objects
Cell = int | float | bool | str | None | list[Any] | dict[str, Any]


def _absent(value: Any) -> bool:
    """Fields that only some privacy modes fill are left out, not sent as null."""
    return value is None


class TableInfo(BaseModel):
    table: str
    rows: int = Field(description="Rows in the refined table.")
    columns: int = Field(description="Number of columns.")
    primary_key: list[str] = Field(default_factory=list)
    description: str | None = None


class TableList(BaseModel):
    dialect: str = Field(description="SQL dialect of the warehouse (duckdb or postgres).")
    privacy: str = Field(description="DIA_PRIVACY mode: what values the host may see.")
    tables: list[TableInfo]


class ColumnInfo(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str
    type: str
    description: str | None = None
    sample_values: list[Cell] | None = Field(None, description="Only with DIA_PRIVACY=samples (absent otherwise).",
                                             exclude_if=_absent)


class TableDescription(BaseModel):
    model_config = ConfigDict(extra="allow")
    table: str
    rows: int
    description: str | None = None
    primary_key: list[str] = Field(default_factory=list)
    foreign_keys: list[str] = Field(default_factory=list, description="'column -> table.column' each.")
    columns: list[ColumnInfo]


class SqlPage(BaseModel):
    columns: list[str]
    rows: list[list[Cell]] = Field(description="This page's rows, in the statement's order then by every column.")
    shown: int = Field(description="Rows on this page.")
    offset: int = Field(description="Position of this page's first row in the whole result.")
    page_size: int
    next_cursor: str | None = Field(None, description="Pass it back with the same sql for the next page; "
                                                      "null on the last page.")
    cut: str | None = Field(None, description="Why fewer rows than page_size came back (byte cap), if so.")
    timeout_s: float


class ChartInfo(BaseModel):
    kind: str
    reason: str = ""
    chosen_by: str = ""
    files: dict[str, str] = Field(default_factory=dict)


class Answer(BaseModel):
    question_id: str
    status: Literal["answered", "needs_clarification", "failed", "no_model"]
    message: str = ""
    sql: str | None = None
    answer: str = ""
    dialect: str
    verification: dict[str, Any] = Field(default_factory=dict)
    attempts: int = 0
    row_count: int = 0
    columns: list[str] = Field(default_factory=list)
    privacy: str
    warnings: list[str] = Field(default_factory=list)
    folder: str = Field(description="queries/<id>/: answer.md, result.json, result.parquet, chart.")
    chart: ChartInfo | None = None
    rows: list[list[Cell]] | None = Field(None, description="The first rows (DIA_PRIVACY=samples only, absent "
                                          "otherwise); page through all of them with run_sql on `sql`.",
                                          exclude_if=_absent)
    rows_cut: str | None = Field(None, exclude_if=_absent)
    rows_withheld: str | None = Field(None, description="Why no rows are shown (privacy modes).",
                                      exclude_if=_absent)


class SourceColumn(BaseModel):
    source: str
    file: str
    column: str


class ReadBy(BaseModel):
    question_id: str
    question: str
    status: str


class Lineage(BaseModel):
    kind: Literal["answer", "sql", "table", "column"]
    question_id: str | None = None
    question: str | None = None
    sql: str | None = None
    table: str | None = None
    column: str | None = None
    columns: dict[str, Any] | None = Field(
        None, description="answer/sql: result column -> [{warehouse, sources}]; table: column -> sources.")
    sources: list[SourceColumn] | None = None
    read_by: list[ReadBy] | None = Field(None, description="Saved answers whose SQL read this table or column.")


class MemoryHit(BaseModel):
    id: str
    title: str
    kind: str
    score: float
    rule: str | None = None
    tier: str | None = None
    holds_now: bool | None = Field(None, description="Whether the lesson's precondition holds on the data now.")
    check: str | None = None


class MemoryHits(BaseModel):
    query: str
    items: list[MemoryHit]


class SavedAnswer(BaseModel):
    question_id: str
    question: str
    status: str
    verified: bool = Field(description="The answer passed DIA's verification.")
    row_count: int
    columns: list[str]
    sql: str | None = None
    answer: str | None = Field(None, description="The answer text (DIA_PRIVACY=samples only).")
    folder: str


class AnswerList(BaseModel):
    answers: list[SavedAnswer]
    total: int = Field(description="Saved answers in the workspace.")
    next_cursor: str | None = Field(None, description="Pass it back for the next page; null on the last page.")


class ForeignKey(BaseModel):
    table: str
    columns: list[str]
    ref_table: str
    ref_columns: list[str]
    join: str = Field(description="The join condition, ready for SQL.")
    enforced: bool = Field(description="Declared as a constraint in the warehouse.")
    origin: str | None = None
    confidence: float | None = None


class JoinPath(BaseModel):
    tables: list[str] = Field(description="The tables from the first to the last, in order.")
    joins: list[str] = Field(description="One join condition per step.")


class Relationships(BaseModel):
    foreign_keys: list[ForeignKey]
    join_path: JoinPath | None = Field(None, description="The shortest join path, when `to` was given.")
