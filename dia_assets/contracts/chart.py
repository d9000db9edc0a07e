"""The chart contract: which chart the Visualization agent chose for an answer, and why.

Written as `queries/<id>/chart.json` beside `chart.png` and `chart.svg`; read by the
`query_result` asset, `answer.md` and the MCP server. The spec names result columns only,
never data values, so it may be shown in any privacy mode.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from dia_assets.contracts.artifact import Artifact

# 2: measures carry their additivity, categories their order; the spec records the sort,
# panels (separate scales), combined name columns, big-number labels, palette and title lines.
CHART_VERSION = 2

ChartKind = Literal["line", "bar", "scatter", "big_number", "stacked_bar", "table"]
CHART_KINDS: tuple[str, ...] = ("line", "bar", "scatter", "big_number", "stacked_bar", "table")
ColumnRole = Literal["temporal", "quantitative", "nominal"]
SortOrder = Literal["none", "descending", "ordinal", "time"]
Palette = Literal["none", "single", "categorical", "sequential"]


class ColumnShape(BaseModel):
    """One result column as the rules see it: its name and role, never its values."""

    name: str
    role: ColumnRole
    distinct: int = 0
    nulls: int = 0
    semantic_type: str = Field("", description="The warehouse column's semantic type, when the result column is one.")
    additive: bool | None = Field(None, description=(
        "Measures only: parts may be summed (SUM, COUNT) or not (COUNT DISTINCT, AVG, ratios, percentages)."))
    additive_why: str = ""
    ordinal: bool = Field(False, description="Categories with an order of their own (bins, ranks, months by name).")


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
    sort: SortOrder = Field("none", description=(
        "Order of the category axis: descending by `sort_by`, the categories' own order, or time."))
    sort_by: str | None = Field(None, description="The measure the categories are sorted by (descending).")
    panels: list[list[str]] = Field(default_factory=list, description=(
        "Measures per panel, each panel with its own y scale; one group = one shared axis."))
    label: list[str] = Field(default_factory=list, description="Big number: columns naming what the number is about.")
    combined: dict[str, list[str]] = Field(default_factory=dict, description=(
        "Derived column -> result columns joined with a space (an entity's name parts kept whole)."))
    palette: Palette = "none"
    colors: list[str] = Field(default_factory=list, description="Colours in use, one per colour category.")
    title_lines: list[str] = Field(default_factory=list, description="The title as drawn (wrapped, shortened).")
    files: dict[str, str] = Field(default_factory=dict, description="png, svg: the rendered files.")
    warnings: list[str] = Field(default_factory=list)
