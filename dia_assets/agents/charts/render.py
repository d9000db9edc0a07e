"""Render a chart spec offline: Vega-Lite, converted to SVG and PNG by `vl-convert-python`
(no browser, no network; fonts are bundled with it).

Fields are renamed `f0, f1, ...` in the Vega-Lite data so a column name with a dot or a
bracket is never read as a nested field; axis titles carry the real names. After rendering,
the PNG is decoded and checked not to be blank (`ink_fraction`).
"""

from __future__ import annotations

import html
import json
import math
import struct
import textwrap
import zlib
from collections.abc import Iterator, Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from dia_assets.agents.charts import names, order
from dia_assets.agents.charts.choose import SINGLE, colour_field
from dia_assets.agents.jsonable import jsonable
from dia_assets.contracts.chart import ChartSpec
from dia_assets.platform.workspace import QueryFiles

WIDTH, HEIGHT = 480, 300
MAX_POINTS = 5000  # lines and scatters beyond this are cut (and the spec says so)
MIN_INK = 0.002  # a rendered chart with less than this share of non-background pixels is blank
VEGA_LITE = "https://vega.github.io/schema/vega-lite/v5.json"
TITLE_SIZE, TITLE_LINES = 14, 2
CHAR_WIDTH = 0.56  # average glyph width of the bundled sans font, in font sizes
LABEL_LIMIT = 320  # pixels of an axis label before it is cut: names stay whole


def _value(v: Any) -> Any:
    """A JSON value for Vega-Lite; NaN and infinities (not JSON) become gaps."""
    v = float(v) if isinstance(v, Decimal) else jsonable(v)
    return None if isinstance(v, float) and not math.isfinite(v) else v


def _number_text(v: Any) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, (float, Decimal)):
        f = float(v)
        return f"{f:,.0f}" if f.is_integer() else f"{f:,.2f}" if abs(f) >= 1 else f"{f:.4g}"
    return str(v)


def _type(spec: ChartSpec, column: str) -> str:
    role = next((c.role for c in spec.columns if c.name == column), "nominal")
    return {"quantitative": "quantitative", "nominal": "nominal"}.get(role, "temporal")


def title_lines(text: str, width: int = WIDTH, font_size: int = TITLE_SIZE, max_lines: int = TITLE_LINES) -> list[str]:
    """The title wrapped at word boundaries to fit `width` pixels, at most `max_lines` lines;
    a longer title ends with an ellipsis (the full text is the chart's description)."""
    per_line = max(20, int(width / (font_size * CHAR_WIDTH)))
    lines = textwrap.wrap(" ".join(text.split()), per_line, break_long_words=True) or [" "]
    if len(lines) > max_lines:
        last = lines[max_lines - 1]
        lines = lines[:max_lines - 1] + [(last[:per_line - 1].rstrip() + "…")]
    return lines


def _colour(spec: ChartSpec, field: str, domain: list[Any]) -> dict[str, Any]:
    title = "measure" if field == "measure" else field
    return {"color": {"field": "measure" if field == "measure" else "series", "type": "nominal", "title": title,
                      "sort": domain, "scale": {"domain": domain, "range": spec.colors[:len(domain)]}}}


def _series_domain(spec: ChartSpec, rows: list[tuple[Any, ...]], idx: dict[str, int]) -> list[Any]:
    """Colour categories in order: the measures as listed, or the series by total descending
    (their own order when ordinal)."""
    if spec.series is None:
        return list(spec.y)
    shape = next((c for c in spec.columns if c.name == spec.series), None)
    ordered = shape is not None and (shape.ordinal or shape.role == "temporal")
    values = [_value(r[idx[spec.series]]) for r in rows]
    if ordered and shape is not None and shape.role == "temporal":
        return sorted(set(values), key=lambda v: (v is None, str(v)))
    return order.category_order(values, [r[idx[spec.y[0]]] for r in rows], ordered)


def vega_lite(spec: ChartSpec, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> dict[str, Any] | None:
    """The Vega-Lite spec for a chart, or None for a table (nothing to draw). Name parts are
    combined as the spec says; the spec's sort, panels, palette and title are applied."""
    if spec.kind == "table":
        return None
    columns, rows = names.combine(columns, list(rows)[:MAX_POINTS], spec.combined)
    idx = {name: i for i, name in enumerate(columns)}
    lines = title_lines(spec.title or " ")
    base: dict[str, Any] = {
        "$schema": VEGA_LITE, "background": "white", "description": spec.title or spec.kind,
        "title": {"text": lines, "anchor": "start", "fontSize": TITLE_SIZE},
        "config": {"view": {"stroke": None}, "axis": {"labelLimit": LABEL_LIMIT}},
    }
    single = spec.colors[0] if spec.palette == "single" and spec.colors else SINGLE

    if spec.kind == "big_number":
        # the number, and under it what it is about (the row's other columns), never dropped
        value = rows[0][idx[spec.y[0]]]
        about = ", ".join(_number_text(rows[0][idx[c]]) for c in spec.label if c in idx)
        marks: list[dict[str, Any]] = [{"mark": {"type": "text", "fontSize": 64, "fontWeight": "bold", "color": single,
                                                 "dy": -14 if about else 0},
                                        "encoding": {"text": {"field": "v", "type": "nominal"}}}]
        if about:
            marks.append({"mark": {"type": "text", "fontSize": 20, "color": "#333333", "dy": 40, "limit": 340},
                          "encoding": {"text": {"field": "about", "type": "nominal"}}})
        subtitle = f"{spec.y[0]} of {', '.join(spec.label)}" if spec.label else spec.y[0]
        return base | {
            "width": 360, "height": 160,
            "title": base["title"] | {"subtitle": title_lines(subtitle, 360, 12, 2), "subtitleFontSize": 12},
            "data": {"values": [{"v": _number_text(value), "about": about}]},
            "layer": marks,
        }

    # long form: one record per (row, measure); the measure name is the colour when several share a panel
    long: list[dict[str, Any]] = []
    for r in rows:
        for m in spec.y:
            rec = {"value": _value(r[idx[m]]), "measure": m}
            if spec.x is not None:
                rec["x"] = _value(r[idx[spec.x]])
            if spec.series is not None:
                rec["series"] = _value(r[idx[spec.series]])
            long.append(rec)
    field = colour_field(spec)
    domain = _series_domain(spec, rows, idx) if field else []
    colour = _colour(spec, field, domain) if field else {}
    panels = spec.panels or [list(spec.y)]

    if spec.kind == "scatter":
        points = [{"x": _value(r[idx[spec.x or ""]]), "value": _value(r[idx[spec.y[0]]])} for r in rows]
        return base | {"width": WIDTH, "height": HEIGHT, "data": {"values": points},
                       "mark": {"type": "point", "filled": True, "color": single},
                       "encoding": {"x": {"field": "x", "type": "quantitative", "title": spec.x},
                                    "y": {"field": "value", "type": "quantitative", "title": spec.y[0]}}}
    if spec.kind == "stacked_bar" and spec.x is None:
        # one bar of a whole: its parts side by side in proportion, largest first
        return base | {"width": WIDTH, "height": 80, "data": {"values": long}, "mark": "bar",
                       "encoding": {"x": {"field": "value", "type": "quantitative", "stack": "normalize",
                                          "title": f"{spec.y[0]} (share of the whole)", "axis": {"format": "%"}},
                                    "order": {"field": "rank", "type": "quantitative"}, **colour},
                       "transform": [{"calculate": f"indexof({json.dumps(domain)}, datum.series)", "as": "rank"}]}

    if spec.kind == "line":
        x_type = _type(spec, spec.x or "")
        if x_type == "temporal" and rows and not hasattr(rows[0][idx[spec.x or ""]], "isoformat"):
            x_type = "ordinal"  # years as numbers, "2024-01" as text: ordered labels
        x_enc = {"field": "x", "type": x_type, "title": spec.x, "sort": "ascending"}
        x_values = [r[idx[spec.x or ""]] for r in rows if r[idx[spec.x or ""]] is not None]
        if x_type == "temporal" and x_values and all(getattr(v, "day", 0) == 1 for v in x_values):
            # monthly buckets: month ticks, not the days between them
            x_enc |= {"timeUnit": "yearmonth", "axis": {"format": "%b %Y", "tickCount": "month"}}
        mark: dict[str, Any] = {"type": "line", "point": True} | ({} if field else {"color": single})

        def panel(measures: list[str], height: int) -> dict[str, Any]:
            return {"width": WIDTH, "height": height, "mark": mark,
                    "transform": [{"filter": {"field": "measure", "oneOf": measures}}],
                    "encoding": {"x": x_enc, "y": {"field": "value", "type": "quantitative",
                                                   "title": ", ".join(measures)}, **colour}}
    else:
        # bars (grouped when several measures or a series that does not add up), stacked bars per category
        cats = [_value(r[idx[spec.x or ""]]) for r in rows]
        shape = next((c for c in spec.columns if c.name == spec.x), None)
        if spec.sort == "descending" and spec.sort_by in idx:
            x_order = order.category_order(cats, [r[idx[spec.sort_by]] for r in rows], False)
        else:
            x_order = order.category_order(cats, [None] * len(cats), bool(shape and shape.ordinal))
        labels = [str(c) for c in x_order]
        horizontal = len(labels) > 8 or max((len(s) for s in labels), default=0) > 10
        cat = {"field": "x", "type": "nominal", "title": spec.x, "sort": x_order}
        stacked = spec.kind == "stacked_bar"
        mark = {"type": "bar"} | ({} if field else {"color": single})

        def panel(measures: list[str], height: int) -> dict[str, Any]:
            val = {"field": "value", "type": "quantitative", "title": ", ".join(measures),
                   "stack": "zero" if stacked else None}
            enc: dict[str, Any] = {"x": val, "y": cat} if horizontal else {
                "x": cat | {"axis": {"labelAngle": 0 if max((len(s) for s in labels), default=0) <= 6 else -40}},
                "y": val}
            offset = "series" if spec.series is not None and not stacked else (
                "measure" if len(measures) > 1 else None)
            if offset:
                enc["yOffset" if horizontal else "xOffset"] = {"field": offset, "sort": domain}
            width = WIDTH if not horizontal else max(160, WIDTH // len(panels))
            return {"width": width, "height": height if not horizontal else max(HEIGHT, 18 * len(labels)),
                    "mark": mark, "transform": [{"filter": {"field": "measure", "oneOf": measures}}],
                    "encoding": enc | colour}

        if horizontal and len(panels) > 1:
            return base | {"data": {"values": long}, "hconcat": [panel(p, HEIGHT) for p in panels],
                           "resolve": {"scale": {"x": "independent", "color": "shared"}}}

    if len(panels) == 1:
        return base | {"data": {"values": long}} | panel(panels[0], HEIGHT)
    height = max(140, HEIGHT // len(panels))
    return base | {"data": {"values": long}, "vconcat": [panel(p, height) for p in panels],
                   "resolve": {"scale": {"y": "independent", "color": "shared"}}}


# -- blank check ----------------------------------------------------------------------------


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def png_rows(png: bytes) -> Iterator[tuple[int, int, int, bytes]]:
    """(width, height, bytes per pixel, one row's pixel bytes) of an 8-bit, non-interlaced PNG,
    top row first, each row unfiltered as it comes (a caller may stop early)."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG file")
    pos, idat = 8, bytearray()
    width = height = bpp = 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos:pos + 4])
        kind, body = png[pos + 4:pos + 8], png[pos + 8:pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(colour)
            if depth != 8 or interlace or channels is None:
                raise ValueError(f"unsupported PNG (bit depth {depth}, colour type {colour}, interlace {interlace})")
            bpp = channels
        elif kind == b"IDAT":
            idat += body
        elif kind == b"IEND":
            break
    raw = zlib.decompress(bytes(idat))
    stride = width * bpp
    prev = bytearray(stride)
    for row in range(height):
        start = row * (stride + 1)
        ftype, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if ftype == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xFF
        elif ftype == 2:
            line = bytearray((a + b) & 0xFF for a, b in zip(line, prev, strict=True))
        elif ftype == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 0xFF
        elif ftype == 4:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                up_left = prev[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + _paeth(left, prev[i], up_left)) & 0xFF
        yield width, height, bpp, bytes(line)
        prev = line


def ink_fraction(png: bytes, enough: float | None = None) -> float:
    """Share of pixels that differ from the background (the top-left pixel): 0.0 is blank.
    With `enough`, decoding stops at the first row where that share is reached (the result is
    then at least `enough`, not the whole share): every answer's chart is checked not to be
    blank, and decoding a whole PNG in Python took 1.6 s of a 5 s answer (issue 31)."""
    background = b""
    inked = total = 0
    for width, height, bpp, line in png_rows(png):
        if not background:
            background, total = line[:bpp], width * height
        if line != background * width:  # most rows of a chart are background: one comparison
            view = memoryview(line)
            inked += sum(1 for i in range(0, len(line), bpp) if view[i:i + bpp] != background)
            if enough is not None and inked >= enough * total:
                break
    return inked / total if total else 0.0


# -- files ----------------------------------------------------------------------------------


def render_chart(spec: ChartSpec, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                 folder: str | Path) -> ChartSpec:
    """Write chart.svg and chart.png (not for a table) and chart.json into `folder`."""
    import vl_convert as vlc

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    files_at = QueryFiles(folder)
    for stale in (files_at.chart_png, files_at.chart_svg):
        stale.unlink(missing_ok=True)
    warnings = list(spec.warnings)
    files: dict[str, str] = {}
    vl = vega_lite(spec, columns, rows)
    plotted = 0 if vl is None else min(len(rows), MAX_POINTS)
    if len(rows) > MAX_POINTS and vl is not None:
        warnings.append(f"chart shows the first {MAX_POINTS} of {len(rows)} rows")
    if vl is not None:
        svg = with_tooltip(vlc.vegalite_to_svg(vl), spec.title)
        png = vlc.vegalite_to_png(vl, scale=1.0)
        files_at.chart_svg.write_text(svg, encoding="utf-8")
        files_at.chart_png.write_bytes(png)
        files = {"png": str(files_at.chart_png), "svg": str(files_at.chart_svg)}
        ink = ink_fraction(png, enough=MIN_INK)
        if ink < MIN_INK:
            warnings.append(f"the rendered chart is blank ({ink:.4f} of its pixels inked)")
    drawn = title_lines(spec.title or " ") if vl is not None else []
    done = spec.model_copy(update={"files": files, "rows_plotted": plotted, "warnings": warnings,
                                   "title_lines": drawn})
    done.write(files_at.chart)
    return done


def with_tooltip(svg: str, title: str) -> str:
    """The full title as the SVG's own <title> (shown as a tooltip, read by screen readers),
    since the drawn title may be shortened."""
    if not title:
        return svg
    end = svg.find(">", svg.find("<svg"))
    return svg if end < 0 else f"{svg[:end + 1]}<title>{html.escape(title)}</title>{svg[end + 1:]}"


def write_chart_file(spec: ChartSpec, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                     path: str | Path) -> Path:
    """One rendering of the chart at `path`, by its suffix: .png, .svg, .html (self-contained,
    the Vega-Lite runtime inlined: opens offline) or .json (the Vega-Lite spec)."""
    import vl_convert as vlc

    target = Path(path)
    vl = vega_lite(spec, columns, rows)
    if vl is None:
        raise ValueError(f"no chart to draw: {spec.reason}")
    suffix = target.suffix.lower()
    target.parent.mkdir(parents=True, exist_ok=True)
    if suffix == ".png":
        target.write_bytes(vlc.vegalite_to_png(vl, scale=1.0))
    elif suffix == ".svg":
        target.write_text(with_tooltip(vlc.vegalite_to_svg(vl), spec.title), encoding="utf-8")
    elif suffix == ".html":
        page = vlc.vegalite_to_html(vl, bundle=True)
        if spec.title:
            page = page.replace("<title>Chart</title>", f"<title>{html.escape(spec.title)}</title>", 1)
        target.write_text(page, encoding="utf-8")
    elif suffix == ".json":
        target.write_text(json.dumps(vl, indent=2, default=str), encoding="utf-8")
    else:
        raise ValueError(f"unknown chart file type {target.suffix!r}: use .png, .svg, .html or .json")
    return target


def chart_for_result(question: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], folder: str | Path,
                     *, model: Any = None, privacy: str = "samples",
                     usage: list[dict[str, Any]] | None = None, semantic_types: dict[str, str] | None = None,
                     sql: str | None = None) -> ChartSpec:
    """Choose (rules, then the optional model) and render: what the query pipeline calls."""
    from dia_assets.agents.charts.choose import choose_chart

    spec = choose_chart(question, columns, rows, model=model, privacy=privacy, usage=usage,
                        semantic_types=semantic_types, sql=sql)
    return render_chart(spec, columns, rows, folder)


def inline_markdown(chart: ChartSpec) -> str:
    """Markdown with the PNG inline (a data URI), for viewers that cannot open workspace files
    such as the Dagster UI's materialization metadata."""
    import base64

    by = "the model" if chart.chosen_by == "model" else "the rules"
    text = f"**{chart.kind.replace('_', ' ')}** chosen by {by}: {chart.reason}"
    png = Path(chart.files["png"]) if "png" in chart.files else None
    if png is None or not png.exists():
        return text
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return f"![{chart.kind} chart](data:image/png;base64,{data})\n\n{text}"
