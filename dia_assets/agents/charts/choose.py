"""Which chart fits a result: rules over the result's shape, then an optional model pass.

The rules look at each column's role (temporal, quantitative, nominal), read off the values
the engine returned, and at the row count. An entity's name parts (`first_name`, `last_name`)
are first joined into one label column (`names.py`). Then:

- no rows, or nothing numeric -> table;
- one row with one measure -> big number, labelled with the row's other columns (what it is about);
- one time column and measures (optionally one category as the series) -> line;
- two categories and one additive measure -> stacked bar (each category split into its parts);
- two categories and a measure that does not add up (distinct counts, averages, ratios) ->
  grouped bar (parts side by side: a stack would draw a meaningless total);
- one category and a share (`pct`, `share`, ... summing to 100% or 1) -> stacked bar;
- one category and measures -> bar (several measures side by side);
- two or more measures and no category -> scatter of the first two;
- anything else, or too many categories or series to read -> table.

Every chart is then dressed as a careful analyst would (`dress`): categories sorted by value,
largest first, unless they have an order of their own (`order.py`); measures whose magnitudes
differ more than 50x in separate panels with their own scales (`measures.py`); a categorical
palette without repeats for nominal colours, a sequential one for ordered colours, a single
colour when colour encodes nothing.

A model may then override the rules' choice with a reason (`DIA_CHART_MODEL`, any litellm
model, through the project's one model door). Its proposal is checked against the shape
(columns exist, roles fit the chart, no stack of a measure that does not add up) and refused
with a recorded reason when it does not fit. The model sees column names, roles and counts;
sample rows only in privacy mode `samples` (DIA_PRIVACY).
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Callable, Sequence
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from dia_assets.agents.charts import measures, names, order
from dia_assets.agents.jsonable import jsonable
from dia_assets.contracts.chart import CHART_KINDS, ChartSpec, ColumnShape
from dia_assets.platform.settings import get_settings

MAX_CATEGORIES = 50  # bars beyond this are unreadable: a table instead
MAX_SERIES = 12  # colours a reader can tell apart (the categorical palette has this many)
MAX_LABELS = 3  # a big number's row may name its entity with this many columns
GROUPED_BAR_ROWS = 30  # category x several measures: grouped bars up to here, scatter beyond
SAMPLE_ROWS = 10  # rows a model may see in `samples` mode

TIME_WORDS = {"date", "day", "week", "month", "quarter", "year", "period", "time", "hour", "timestamp"}
SHARE_WORDS = {"share", "pct", "percent", "percentage", "fraction", "proportion", "ratio"}
ISO_TIME = re.compile(r"^\d{4}(-\d{2}(-\d{2})?([ T][\d:.]+)?|-Q[1-4]|-W\d{2})$")

PROMPTS = Path(__file__).resolve().parents[2] / "prompts" / "chart.yaml"

# Tableau 10 and two more distinct hues: no colour repeats up to MAX_SERIES categories.
CATEGORICAL = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
               "#9c755f", "#bab0ac", "#1b3b6f", "#b6992d"]
SINGLE = "#4e79a7"
SEQUENTIAL_ENDS = ((0x9e, 0xca, 0xe1), (0x08, 0x30, 0x6b))  # light to dark blue, the lightest visible on white

# messages -> (reply text, usage {model, prompt_tokens, completion_tokens, cost_usd, latency_s})
ChartModel = Callable[[list[dict[str, Any]]], tuple[str, dict[str, Any]]]


# -- the result's shape ---------------------------------------------------------------------


def _words(name: str) -> set[str]:
    return {w for w in re.split(r"[^a-z0-9]+", name.lower()) if w}


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, Decimal)) and not isinstance(v, bool)


def _role(name: str, values: list[Any]) -> str:
    """temporal, quantitative or nominal, from the values (never from the name alone)."""
    if not values:
        return "nominal"
    words = _words(name)
    if all(isinstance(v, (dt.date, dt.datetime)) for v in values):
        return "temporal"
    if all(_is_number(v) for v in values):
        if words & TIME_WORDS and all(isinstance(v, int) for v in values):
            return "temporal"  # year 2024, month 3: ordered time, not a measure
        if "id" in words or name.lower().endswith(("_id", "_no", "_code")) or words & {"code", "key"}:
            return "nominal"
        return "quantitative"
    if all(isinstance(v, str) and ISO_TIME.match(v.strip()) for v in values):
        return "temporal"
    return "nominal"


def column_shapes(columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
                  semantic_types: dict[str, str] | None = None, sql: str | None = None) -> list[ColumnShape]:
    """Each column's role and counts, a measure's additivity, a category's own order; values
    are read, never kept. `semantic_types` (warehouse types of result columns) and `sql` (the
    statement that made the result) sharpen additivity."""
    types = semantic_types or {}
    from_sql = measures.sql_aggregates(sql)
    out = []
    for i, name in enumerate(columns):
        values = [r[i] for r in rows if r[i] is not None]
        distinct = len({repr(jsonable(v)) for v in values})
        shape = ColumnShape(name=name, role=_role(name, values), distinct=distinct,
                            nulls=len(rows) - len(values), semantic_type=types.get(name, ""))
        if shape.role == "quantitative":
            shape.additive, shape.additive_why = measures.additivity(name, shape.semantic_type, from_sql)
        elif shape.role == "nominal":
            shape.ordinal = order.is_ordinal(name, values)
        out.append(shape)
    return out


# -- the rules ------------------------------------------------------------------------------


def _spec(kind: str, reason: str, shapes: list[ColumnShape], rows: int, *, x: str | None = None,
          y: list[str] | None = None, series: str | None = None) -> ChartSpec:
    return ChartSpec(kind=kind, x=x, y=y or [], series=series, reason=reason, rule_kind=kind,  # type: ignore[arg-type]
                     columns=shapes, row_count=rows)


def _is_share(column: ColumnShape, index: int, rows: Sequence[Sequence[Any]]) -> bool:
    """A share column: named like one, non-negative, summing to 100 or to 1 (within 2%)."""
    if not _words(column.name) & SHARE_WORDS:
        return False
    values = [float(r[index]) for r in rows if r[index] is not None]
    if not values or min(values) < 0:
        return False
    total = sum(values)
    return abs(total - 100) <= 2 or abs(total - 1) <= 0.02


def rule_chart(columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
               semantic_types: dict[str, str] | None = None, sql: str | None = None) -> ChartSpec:
    """The rules' chart for a result (module docstring), dressed. Deterministic; no model."""
    groups = names.name_groups(columns, rows, semantic_types)
    columns, rows = names.combine(columns, rows, groups)
    spec = _rules(columns, rows, semantic_types=semantic_types, sql=sql)
    return dress(spec.model_copy(update={"combined": groups}), columns, rows)


def _rules(columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
           semantic_types: dict[str, str] | None, sql: str | None) -> ChartSpec:
    shapes = column_shapes(columns, rows, semantic_types=semantic_types, sql=sql)
    n = len(rows)
    T = [s for s in shapes if s.role == "temporal"]
    Q = [s for s in shapes if s.role == "quantitative"]
    N = [s for s in shapes if s.role == "nominal"]
    if not shapes or n == 0:
        return _spec("table", "the result has no rows", shapes, n)
    if not Q:
        return _spec("table", "no numeric measure to plot", shapes, n)
    if n == 1:
        if len(Q) == 1 and len(T) + len(N) <= MAX_LABELS:
            labels = [s.name for s in shapes if s.role != "quantitative"]
            about = f" for the {', '.join(labels)} it is about" if labels else ""
            return _spec("big_number", f"a single number: {Q[0].name}{about}", shapes, n, y=[Q[0].name]
                         ).model_copy(update={"label": labels})
        return _spec("table", "one row with several values reads best as a table", shapes, n)
    if len(T) > 1:
        return _spec("table", f"{len(T)} time columns: no single time axis", shapes, n)
    if len(T) == 1:
        if len(N) > 1:
            return _spec("table", "a time axis with more than one category column", shapes, n)
        if N:
            if N[0].distinct > MAX_SERIES:
                return _spec("table", f"{N[0].distinct} series in {N[0].name}: too many lines to read", shapes, n)
            return _spec("line", f"{Q[0].name} over {T[0].name}, one line per {N[0].name}", shapes, n,
                         x=T[0].name, y=[Q[0].name], series=N[0].name)
        measures = [q.name for q in Q[:MAX_SERIES]]
        return _spec("line", f"{', '.join(measures)} over {T[0].name} (a time series)", shapes, n,
                     x=T[0].name, y=measures)
    if len(N) == 2 and len(Q) == 1:
        outer, inner = N
        if outer.distinct > MAX_CATEGORIES or inner.distinct > MAX_SERIES:
            return _spec("table", f"{outer.distinct} x {inner.distinct} categories: too many to stack", shapes, n)
        if not Q[0].additive:
            return _spec("bar", f"{Q[0].name} per {outer.name} and {inner.name}, side by side: "
                         f"{Q[0].name} does not add up ({Q[0].additive_why}), so no stack",
                         shapes, n, x=outer.name, y=[Q[0].name], series=inner.name)
        return _spec("stacked_bar", f"{Q[0].name} per {outer.name}, split into its parts by {inner.name}",
                     shapes, n, x=outer.name, y=[Q[0].name], series=inner.name)
    if len(N) > 2 or (len(N) == 2 and len(Q) > 1):
        return _spec("table", "more category columns than a chart can show", shapes, n)
    if len(N) == 1:
        cat = N[0]
        if len(Q) == 1 and cat.distinct <= MAX_SERIES and _is_share(Q[0], list(columns).index(Q[0].name), rows):
            Q[0].additive, Q[0].additive_why = True, "shares that sum to the whole"
            return _spec("stacked_bar", f"{Q[0].name} are parts of a whole (they sum to 100%) over {cat.name}",
                         shapes, n, y=[Q[0].name], series=cat.name)
        if len(Q) == 1:
            if cat.distinct > MAX_CATEGORIES:
                return _spec("table", f"{cat.distinct} categories in {cat.name}: too many bars", shapes, n)
            return _spec("bar", f"{Q[0].name} per {cat.name} (category x measure)", shapes, n,
                         x=cat.name, y=[Q[0].name])
        if n <= GROUPED_BAR_ROWS:
            measures = [q.name for q in Q[:MAX_SERIES]]
            return _spec("bar", f"{', '.join(measures)} side by side per {cat.name}", shapes, n,
                         x=cat.name, y=measures)
        return _spec("scatter", f"{Q[1].name} against {Q[0].name} over {n} {cat.name} values", shapes, n,
                     x=Q[0].name, y=[Q[1].name], series=None)
    if len(Q) >= 2:
        return _spec("scatter", f"two measures: {Q[1].name} against {Q[0].name}", shapes, n,
                     x=Q[0].name, y=[Q[1].name])
    return _spec("table", f"one measure ({Q[0].name}) with nothing to plot it against", shapes, n)


# -- dressing: what a careful analyst does to any chart ------------------------------------


def sequential_colors(n: int) -> list[str]:
    """`n` distinct blues from light to dark, for categories with an order."""
    (r0, g0, b0), (r1, g1, b1) = SEQUENTIAL_ENDS
    steps = [i / (n - 1) if n > 1 else 1.0 for i in range(n)]
    return [f"#{round(r0 + (r1 - r0) * t):02x}{round(g0 + (g1 - g0) * t):02x}{round(b0 + (b1 - b0) * t):02x}"
            for t in steps]


def colour_field(spec: ChartSpec) -> str | None:
    """What colour encodes: the series column, the measure name (several measures sharing a
    panel), or nothing (None)."""
    if spec.kind in ("table", "big_number", "scatter"):
        return None
    if spec.series is not None:
        return spec.series
    if len(spec.y) > 1 and any(len(p) > 1 for p in spec.panels):
        return "measure"
    return None


def _palette(spec: ChartSpec) -> tuple[str, list[str]]:
    if spec.kind == "table":
        return "none", []
    field = colour_field(spec)
    if field is None:
        return "single", [SINGLE]
    if field == "measure":
        return "categorical", CATEGORICAL[:len(spec.y)]
    shape = next((c for c in spec.columns if c.name == field), None)
    count = shape.distinct if shape is not None else MAX_SERIES
    if shape is not None and (shape.ordinal or shape.role == "temporal"):
        return "sequential", sequential_colors(count)
    if count > len(CATEGORICAL):  # never repeat a colour: more categories than hues is unreadable
        return "sequential", sequential_colors(count)
    return "categorical", CATEGORICAL[:count]


def dress(spec: ChartSpec, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> ChartSpec:
    """Sort, panels and palette for a chosen chart (module docstring). `columns`/`rows` are the
    result with name parts already combined."""
    shapes = {c.name: c for c in spec.columns}
    update: dict[str, Any] = {"sort": "none", "sort_by": None, "panels": [], "palette": "none", "colors": []}
    if spec.kind in ("bar", "stacked_bar") and spec.y:
        axis = spec.x if spec.x is not None else spec.series  # a whole's parts are ordered too
        shape = shapes.get(axis or "")
        if shape is not None and (shape.ordinal or shape.role == "temporal"):
            update["sort"] = "ordinal" if shape.ordinal else "time"
        else:
            update |= {"sort": "descending", "sort_by": spec.y[0]}
    elif spec.kind == "line":
        update["sort"] = "time"
    if spec.kind in ("bar", "line", "stacked_bar", "scatter") and spec.y:
        update["panels"] = measures.panels(spec.y, columns, rows) if len(spec.y) > 1 else [list(spec.y)]
    dressed = spec.model_copy(update=update)
    palette, colors = _palette(dressed)
    return dressed.model_copy(update={"palette": palette, "colors": colors})


# -- the model pass -------------------------------------------------------------------------


def check_proposal(proposal: dict[str, Any], base: ChartSpec) -> ChartSpec:
    """A model's chart, validated against the result's shape; raises ValueError saying why not."""
    kind = proposal.get("kind")
    if kind not in CHART_KINDS:
        raise ValueError(f"unknown chart kind {kind!r}")
    reason = str(proposal.get("reason") or "").strip()
    if not reason:
        raise ValueError("no reason given for the override")
    roles = {c.name: c.role for c in base.columns}
    x = proposal.get("x") or None
    y = proposal.get("y") or []
    y = [y] if isinstance(y, str) else list(y)
    series = proposal.get("series") or None
    for name in [x, series, *y]:
        if name is not None and name not in roles:
            raise ValueError(f"no result column {name!r}")
    if kind != "table" and (not y or any(roles[m] != "quantitative" for m in y)):
        raise ValueError(f"a {kind} needs numeric measures on y (got {y})")
    if kind == "big_number" and (base.row_count != 1 or len(y) != 1):
        raise ValueError("a big number needs one row and one measure")
    if kind == "line" and (x is None or roles[x] == "quantitative" and x in y):
        raise ValueError("a line needs an x column other than its measures")
    if kind == "bar" and x is None:
        raise ValueError("a bar chart needs a category on x")
    if kind == "stacked_bar" and series is None:
        raise ValueError("a stacked bar needs a series column (the parts)")
    shapes = {c.name: c for c in base.columns}
    if kind == "stacked_bar" and base.rule_kind != "stacked_bar" and any(shapes[m].additive is False for m in y):
        m = next(m for m in y if shapes[m].additive is False)
        raise ValueError(f"{m} does not add up ({shapes[m].additive_why}): stacking it draws a meaningless total")
    if kind == "scatter" and (x is None or roles[x] != "quantitative" or len(y) != 1):
        raise ValueError("a scatter needs a numeric x and one numeric y")
    return base.model_copy(update={
        "kind": kind, "x": x if kind not in ("big_number", "table") else None, "y": y if kind != "table" else [],
        "series": series, "reason": reason[:500], "chosen_by": "model",
        "label": base.label if kind == "big_number" else [],
    })


@lru_cache(maxsize=1)
def prompts() -> dict[str, str]:
    return yaml.safe_load(PROMPTS.read_text(encoding="utf-8"))


def model_messages(question: str, base: ChartSpec, rows: Sequence[Sequence[Any]],
                   privacy: str) -> list[dict[str, Any]]:
    """The model pass's prompt: names, roles and counts; sample rows only in `samples` mode."""
    payload: dict[str, Any] = {
        "question": question,
        "row_count": base.row_count,
        "columns": [c.model_dump() for c in base.columns],
        "rules_choice": {"kind": base.kind, "x": base.x, "y": base.y, "series": base.series, "reason": base.reason},
    }
    if privacy == "samples":
        payload["sample_rows"] = jsonable([list(r) for r in rows[:SAMPLE_ROWS]])
    data = json.dumps(payload, ensure_ascii=False).replace("<", "\\u003c")
    p = prompts()
    return [{"role": "system", "content": p["system"]},
            {"role": "user", "content": p["user"].replace("{payload}", data)}]


def _parse_reply(text: str) -> dict[str, Any]:
    match = re.search(r"\{.*\}", text or "", re.S)
    if not match:
        raise ValueError("the reply holds no JSON object")
    try:
        value = json.loads(match.group(0))
    except json.JSONDecodeError as err:
        raise ValueError(f"the reply is not valid JSON: {err}") from err
    if not isinstance(value, dict):
        raise ValueError("the reply is not a JSON object")
    return value


def choose_chart(
    question: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
    model: ChartModel | None = None, privacy: str = "samples", usage: list[dict[str, Any]] | None = None,
    semantic_types: dict[str, str] | None = None, sql: str | None = None,
) -> ChartSpec:
    """The rules' chart, then the model's override when a model is given and its proposal
    fits the result. `usage` collects the model call's tokens and cost for the trace;
    `semantic_types` and `sql` tell which measures add up (measures.py)."""
    base = rule_chart(columns, rows, semantic_types=semantic_types, sql=sql).model_copy(
        update={"title": question, "privacy": privacy})
    columns, rows = names.combine(columns, rows, base.combined)
    if model is None or not base.columns or base.row_count == 0:
        return base
    try:
        text, call_usage = model(model_messages(question, base, rows, privacy))
    except Exception as err:  # a chart is an aid: keep the rules' choice, say why
        return base.model_copy(update={"override_refused": f"model call failed: {type(err).__name__}: {err}"[:300]})
    if usage is not None:
        usage.append(call_usage)
    try:
        proposal = _parse_reply(text)
        if proposal.get("keep") is True or proposal.get("kind") in (None, base.kind) and not proposal.get("reason"):
            return base
        return dress(check_proposal(proposal, base), columns, rows)
    except ValueError as err:
        return base.model_copy(update={"override_refused": str(err)[:300]})


def litellm_chart_model(model: str, timeout_s: float = 60.0) -> ChartModel:
    """A ChartModel over the project's one model door (retries, cost)."""
    from dia_assets.platform.model.litellm import complete_text

    def call(messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
        text, usage = complete_text(model, messages, temperature=0.0, timeout=timeout_s, drop_params=True)
        return text, usage.as_dict()

    return call


def chart_model_from_env() -> ChartModel | None:
    """`DIA_CHART_MODEL` (a litellm model name) turns the model pass on; unset = rules only."""
    name = get_settings().chart_model
    return litellm_chart_model(name) if name else None
