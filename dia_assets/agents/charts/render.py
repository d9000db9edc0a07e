"""Render a chart spec offline: Vega-Lite, converted to SVG and PNG by `vl-convert-python`
(no browser, no network; fonts are bundled with it).

Fields are renamed `f0, f1, ...` in the Vega-Lite data so a column name with a dot or a
bracket is never read as a nested field; axis titles carry the real names. After rendering,
the PNG is decoded and checked not to be blank (`ink_fraction`).
"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any

from dia_assets.agents.jsonable import jsonable
from dia_assets.contracts.chart import ChartSpec

WIDTH, HEIGHT = 480, 300
MAX_POINTS = 5000  # lines and scatters beyond this are cut (and the spec says so)
MIN_INK = 0.002  # a rendered chart with less than this share of non-background pixels is blank
VEGA_LITE = "https://vega.github.io/schema/vega-lite/v5.json"


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


def vega_lite(spec: ChartSpec, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> dict[str, Any] | None:
    """The Vega-Lite spec for a chart, or None for a table (nothing to draw)."""
    if spec.kind == "table":
        return None
    idx = {name: i for i, name in enumerate(columns)}
    base: dict[str, Any] = {
        "$schema": VEGA_LITE, "background": "white", "width": WIDTH, "height": HEIGHT,
        "title": {"text": spec.title[:90] or " ", "anchor": "start", "fontSize": 14},
        "config": {"view": {"stroke": None}, "axis": {"labelLimit": 160}},
    }
    rows = list(rows)[:MAX_POINTS]

    if spec.kind == "big_number":
        value = rows[0][idx[spec.y[0]]]
        return base | {
            "width": 360, "height": 140, "title": {"text": spec.title[:90] or " ", "subtitle": spec.y[0], "anchor": "start"},
            "data": {"values": [{"v": _number_text(value)}]},
            "mark": {"type": "text", "fontSize": 64, "fontWeight": "bold", "color": "#1f4e79"},
            "encoding": {"text": {"field": "v", "type": "nominal"}},
        }

    # long form: one record per (row, measure); the measure name is the series when several
    long: list[dict[str, Any]] = []
    for r in rows:
        for m in spec.y:
            rec = {"value": _value(r[idx[m]]), "measure": m}
            if spec.x is not None:
                rec["x"] = _value(r[idx[spec.x]])
            if spec.series is not None:
                rec["series"] = _value(r[idx[spec.series]])
            long.append(rec)
    y_title = spec.y[0] if len(spec.y) == 1 else "value"
    colour_field = "series" if spec.series is not None else ("measure" if len(spec.y) > 1 else None)
    colour_title = spec.series if spec.series is not None else "measure"
    colour = {"color": {"field": colour_field, "type": "nominal", "title": colour_title, "sort": None}} if colour_field else {}
    y = {"field": "value", "type": "quantitative", "title": y_title}

    if spec.kind == "line":
        x_type = _type(spec, spec.x or "")
        if x_type == "temporal" and rows and not hasattr(rows[0][idx[spec.x or ""]], "isoformat"):
            x_type = "ordinal"  # years as numbers, "2024-01" as text: ordered labels
        return base | {"data": {"values": long}, "mark": {"type": "line", "point": True},
                       "encoding": {"x": {"field": "x", "type": x_type, "title": spec.x, "sort": "ascending"},
                                    "y": y, **colour}}
    if spec.kind == "scatter":
        points = [{"x": _value(r[idx[spec.x or ""]]), "value": _value(r[idx[spec.y[0]]])} for r in rows]
        return base | {"data": {"values": points}, "mark": {"type": "point", "filled": True},
                       "encoding": {"x": {"field": "x", "type": "quantitative", "title": spec.x}, "y": y}}
    if spec.kind == "stacked_bar" and spec.x is None:
        # one bar of a whole: its parts side by side in proportion
        return base | {"height": 80, "data": {"values": long}, "mark": "bar",
                       "encoding": {"x": {"field": "value", "type": "quantitative", "stack": "normalize",
                                          "title": f"{spec.y[0]} (share of the whole)", "axis": {"format": "%"}},
                                    **colour}}
    # bars (grouped when several measures) and stacked bars per category, in the result's order
    labels = [str(r[idx[spec.x or ""]]) for r in rows]
    horizontal = len(set(labels)) > 8 or max((len(s) for s in labels), default=0) > 10
    cat = {"field": "x", "type": "nominal", "title": spec.x, "sort": None}
    enc: dict[str, Any] = {"x": y, "y": cat} if horizontal else {"x": cat | {"axis": {"labelAngle": 0}}, "y": y}
    if spec.kind == "bar" and len(spec.y) > 1:
        enc["yOffset" if horizontal else "xOffset"] = {"field": "measure", "sort": None}
    return base | {"data": {"values": long}, "mark": "bar", "encoding": enc | colour}


# -- blank check ----------------------------------------------------------------------------


def _paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def png_pixels(png: bytes) -> tuple[int, int, int, bytes]:
    """(width, height, bytes per pixel, raw pixel bytes) of an 8-bit, non-interlaced PNG."""
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
    out = bytearray(height * stride)
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
        out[row * stride:(row + 1) * stride] = line
        prev = line
    return width, height, bpp, bytes(out)


def ink_fraction(png: bytes) -> float:
    """Share of pixels that differ from the background (the top-left pixel): 0.0 is blank."""
    width, height, bpp, pixels = png_pixels(png)
    if not width or not height:
        return 0.0
    background = pixels[:bpp]
    view = memoryview(pixels)
    inked = sum(1 for i in range(0, len(pixels), bpp) if view[i:i + bpp] != background)
    return inked / (width * height)


# -- files ----------------------------------------------------------------------------------


def render_chart(spec: ChartSpec, columns: Sequence[str], rows: Sequence[Sequence[Any]],
                 folder: str | Path) -> ChartSpec:
    """Write chart.svg and chart.png (not for a table) and chart.json into `folder`."""
    import vl_convert as vlc

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for stale in ("chart.png", "chart.svg"):
        (folder / stale).unlink(missing_ok=True)
    warnings = list(spec.warnings)
    files: dict[str, str] = {}
    vl = vega_lite(spec, columns, rows)
    plotted = 0 if vl is None else min(len(rows), MAX_POINTS)
    if len(rows) > MAX_POINTS and vl is not None:
        warnings.append(f"chart shows the first {MAX_POINTS} of {len(rows)} rows")
    if vl is not None:
        svg = vlc.vegalite_to_svg(vl)
        png = vlc.vegalite_to_png(vl, scale=1.0)
        (folder / "chart.svg").write_text(svg, encoding="utf-8")
        (folder / "chart.png").write_bytes(png)
        files = {"png": str(folder / "chart.png"), "svg": str(folder / "chart.svg")}
        ink = ink_fraction(png)
        if ink < MIN_INK:
            warnings.append(f"the rendered chart is blank ({ink:.4f} of its pixels inked)")
    done = spec.model_copy(update={"files": files, "rows_plotted": plotted, "warnings": warnings})
    done.write(folder / "chart.json")
    return done


def chart_for_result(question: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], folder: str | Path,
                     *, model: Any = None, privacy: str = "samples",
                     usage: list[dict[str, Any]] | None = None) -> ChartSpec:
    """Choose (rules, then the optional model) and render: what the query pipeline calls."""
    from dia_assets.agents.charts.choose import choose_chart

    spec = choose_chart(question, columns, rows, model=model, privacy=privacy, usage=usage)
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
