"""The chart contract: which chart the Visualization agent chose for an answer, and why.

Written as `queries/<id>/chart.json` beside `chart.png` and `chart.svg`; read by the
`query_result` asset, `answer.md` and the MCP server. The spec names result columns only,
never data values, so it may be shown in any privacy mode.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from dia_assets.contracts.artifact import Artifact

CHART_VERSION = 1

ChartKind = Literal["line", "bar", "scatter", "big_number", "stacked_bar", "table"]
CHART_KINDS: tuple[str, ...] = ("line", "bar", "scatter", "big_number", "stacked_bar", "table")
ColumnRole = Literal["temporal", "quantitative", "nominal"]


class ColumnShape(BaseModel):
    """One result column as the rules see it: its name and role, never its values."""

    name: str
    role: ColumnRole
    distinct: int = 0
    nulls: int = 0


class ChartSpec(Artifact):
    """A chart for one result. `kind == "table"` means no chart fits: nothing is rendered."""

    version: int = CHART_VERSION
    kind: ChartKind
    x: str | None = Field(None, description="Column on the x axis (the category for bars, the time for lines).")
    y: list[str] = Field(default_factory=list, description="Measure columns; several are folded into a series.")
    series: str | None = Field(None, description="Column that splits the marks by colour (lines, stacks).")
    title: str = ""
    reason: str = Field("", description="Why this chart: the rule that fired, or the model's reason.")
    chosen_by: Literal["rules", "model"] = "rules"
    rule_kind: ChartKind = Field("table", description="What the rules chose (differs when a model overrode it).")
    override_refused: str = Field("", description="Why a model's proposal was not taken, if it was not.")
    columns: list[ColumnShape] = Field(default_factory=list)
    row_count: int = 0
    rows_plotted: int = 0
    privacy: str = "samples"
    files: dict[str, str] = Field(default_factory=dict, description="png, svg: the rendered files.")
    warnings: list[str] = Field(default_factory=list)
