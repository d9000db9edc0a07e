"""The Visualization agent (Data Agents §IV): a chart per answered question, chosen from the
result's shape by rules (`choose.py`), optionally overridden by a model with a reason, and
rendered offline to PNG and SVG (`render.py`)."""

from dia_assets.agents.charts.choose import choose_chart, column_shapes, rule_chart
from dia_assets.agents.charts.render import chart_for_result, render_chart

__all__ = ["chart_for_result", "choose_chart", "column_shapes", "render_chart", "rule_chart"]
