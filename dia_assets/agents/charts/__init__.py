"""The Visualization agent (Data Agents §IV): a chart per answered question, chosen from the
result's shape by rules (`choose.py`), optionally overridden by a model with a reason, and
rendered offline to PNG and SVG (`render.py`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from dia_assets.platform.lazy import lazy_exports

if TYPE_CHECKING:
    from dia_assets.agents.charts.choose import (
        ChartModel,
        chart_model_from_env,
        choose_chart,
        column_shapes,
        rule_chart,
    )
    from dia_assets.agents.charts.hints import workspace_semantic_types
    from dia_assets.agents.charts.render import chart_for_result, render_chart, write_chart_file

# Each name is imported from its module on first use (PEP 562), so importing the package
# (a sibling agent, the Dagster code location) loads none of them until it is used.
_EXPORTS = {
    "ChartModel": "dia_assets.agents.charts.choose",
    "chart_model_from_env": "dia_assets.agents.charts.choose",
    "choose_chart": "dia_assets.agents.charts.choose",
    "column_shapes": "dia_assets.agents.charts.choose",
    "rule_chart": "dia_assets.agents.charts.choose",
    "workspace_semantic_types": "dia_assets.agents.charts.hints",
    "chart_for_result": "dia_assets.agents.charts.render",
    "render_chart": "dia_assets.agents.charts.render",
    "write_chart_file": "dia_assets.agents.charts.render",
}


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


__all__ = [
    "ChartModel",
    "chart_for_result",
    "chart_model_from_env",
    "choose_chart",
    "column_shapes",
    "render_chart",
    "rule_chart",
    "workspace_semantic_types",
    "write_chart_file",
]
