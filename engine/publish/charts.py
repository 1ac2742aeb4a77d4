"""The report's charts as Plotly figures: plain data (a dict per figure, what plotly.js draws), built from the
chart entries stages put in their report sections (engine.publish.report). Plotly.js ships inside the plotly
package, so report.html draws them offline, with hover naming each point and legends that scroll instead of
being cut at the edge."""

from __future__ import annotations

import html
import json
from functools import lru_cache
from importlib import resources

from ortflow.engine.leaves.json_types import Json, number
from ortflow.engine.publish.figure_types import (
    Axis,
    ChartPoint,
    Figure,
    Font,
    Layout,
    Legend,
    Shape,
    Trace,
)
from ortflow.engine.publish.report_types import PointJson

PALETTE = ["#3367d6", "#e8710a", "#188038", "#d93025", "#9334e6", "#12b5cb", "#f9ab00", "#5f6368"]
SYMBOLS = ["circle", "square", "diamond", "triangle-up", "cross", "x"]
FONT: Font = {"family": "system-ui, sans-serif", "size": 13}


def axis(title: str, unit: str) -> Axis:
    """An axis titled with its unit, the unit on each tick too."""
    text = f"{title} ({unit})" if unit and f"({unit})" not in title else title
    suffix = {"x": "x", "ms": " ms", "MB": " MB"}.get(unit, "")
    return {
        "title": {"text": html.escape(text)},
        "ticksuffix": suffix,
        "automargin": True,
        "zeroline": False,
    }


def color_map(names: list[str]) -> dict[str, str]:
    """One colour per model for the whole report, in the order the models first appear: the same model is the
    same colour in every chart, so a reader follows it from the latency boxes to the trade-off plot."""
    colors: dict[str, str] = {}
    for name in names:
        colors.setdefault(name, PALETTE[len(colors) % len(PALETTE)])
    return colors


def _color(name: str, index: int, colors: dict[str, str] | None) -> str:
    """A model's colour from the report's map; a name the map lacks falls back to its place in this chart."""
    return (colors or {}).get(name) or PALETTE[index % len(PALETTE)]


def distribution_figure(
    series: dict[str, list[float]],
    value_title: str,
    unit: str,
    colors: dict[str, str] | None = None,
) -> Figure:
    """One horizontal box per series (whiskers at 1.5 IQR, outliers hidden: a few slow runs are noise), the
    series named on the category axis, which grows to fit the longest name; the value axis titled as the stage
    type declared it (engine.contracts.declarations.Distribution: benchmark's "latency per run", in ms), starting at zero
    so box lengths compare as ratios; each series in its model's colour (`colors`, from color_map)."""
    names = unique_names(list(series))
    data: list[Trace] = [
        {
            "type": "box",
            "x": list(values),
            "name": name,
            "orientation": "h",
            "boxpoints": False,
            "marker": {"color": _color(raw, i, colors)},
            "hovertemplate": f"<b>{name}</b><br>median %{{median:.3f}} {unit}<extra></extra>",
        }
        for i, (name, (raw, values)) in enumerate(zip(names, series.items()))
        if values
    ]
    layout: Layout = {
        "xaxis": {**axis(value_title, unit), "rangemode": "tozero"},
        "yaxis": {"automargin": True, "autorange": "reversed"},
        "showlegend": False,
        "height": 120 + 34 * len(data),
        "margin": {"t": 20, "r": 20},
        "font": FONT,
    }
    return {"data": data, "layout": layout}


def scatter_figure(
    points: list[ChartPoint],
    x_label: str,
    y_label: str,
    x_unit: str = "",
    y_unit: str = "",
    colors: dict[str, str] | None = None,
    y_bound: float | None = None,
) -> Figure:
    """One trace per point, so each has its own legend entry and hover text; the Pareto front (points with
    `front`) joined by a dashed line; the chosen point (`chosen`) ringed; a zero line where the y axis is a
    margin that crosses zero. Units come from the chart entry or the stage types' declared measures, never
    from a metric's name. The y axis starts at `y_bound` (the recipe's constraint) when there is one, else its
    title states the range it shows: a zoomed axis must not make a 0.0002 difference look like a cliff."""
    names = unique_names([p["label"] for p in points])
    data: list[Trace] = list(_front_line(points))
    hover = (
        f"<br>{html.escape(x_label)}: %{{x:.4g}}{_suffix(x_unit)}"
        f"<br>{html.escape(y_label)}: %{{y:.4g}}{_suffix(y_unit)}<extra></extra>"
    )
    data.extend(
        _point_trace(i, name, point, hover, _color(point["label"], i, colors))
        for i, (name, point) in enumerate(zip(names, points))
    )
    y_range, stated = _y_range([p["y"] for p in points], y_bound)
    y_axis: Axis = {**axis(y_label + stated, y_unit), **y_range}
    layout = _scatter_layout(points, names, axis(x_label, x_unit), y_axis)
    return {"data": data, "layout": layout}


def _front_line(points: list[ChartPoint]) -> list[Trace]:
    """The Pareto front as one dotted line through its points, left to right; none for a front of one."""
    front = sorted((p for p in points if p.get("front")), key=lambda p: p["x"])
    if len(front) <= 1:
        return []
    return [
        {
            "type": "scatter",
            "mode": "lines",
            "x": [p["x"] for p in front],
            "y": [p["y"] for p in front],
            "name": "Pareto front",
            "line": {"dash": "dot", "color": "#5f6368"},
            "hoverinfo": "skip",
        }
    ]


def _y_range(ys: list[float], bound: float | None) -> tuple[Axis, str]:
    """The y axis's range: from the constraint (`bound`) to past the highest point, where a constraint is
    known; else plotly's own range, stated in the axis title when it is a narrow window far from zero."""
    if not ys:
        return {}, ""
    low, high = min(ys), max(ys)
    if bound is not None:
        low = min(low, bound)
        pad = (high - low) * 0.05 or abs(high) * 0.01 or 0.01
        return {
            "range": [low if low == bound else low - pad, high + pad]
        }, f" (from the bound {bound:.4g})"
    span = high - low
    if low > 0 and span < 0.05 * abs(high):  # a window: say so, with the numbers
        pad = span * 0.1 or abs(high) * 0.001
        return {
            "range": [low - pad, high + pad]
        }, f" (axis {low - pad:.6g} to {high + pad:.6g}, not from 0)"
    return {}, ""


def _point_trace(index: int, name: str, point: ChartPoint, hover: str, color: str) -> Trace:
    """One point as its own trace: its model's colour, its shape from its index, larger and ringed when
    chosen; `hover` is the axes' part of its hover text."""
    chosen = bool(point.get("chosen"))
    return {
        "type": "scatter",
        "mode": "markers",
        "x": [point["x"]],
        "y": [point["y"]],
        "name": name + (" (chosen)" if chosen else ""),
        "marker": {
            "size": 16 if chosen else 11,
            "color": color,
            "opacity": 0.85,
            "symbol": SYMBOLS[index // len(PALETTE) % len(SYMBOLS)],  # color and shape: 48 distinct
            "line": {"width": 3 if chosen else 0, "color": "#202124"},
        },
        "hovertemplate": f"<b>{name}</b>{hover}",
    }


def _scatter_layout(
    points: list[ChartPoint], names: list[str], x_axis: Axis, y_axis: Axis
) -> Layout:
    # Beside the plot, a legend of a few short names; below it, many or long ones (a sweep's 24 variant ids),
    # so the plot keeps its width instead of being squeezed to a strip.
    beside = len(points) <= 8 and max((len(n) for n in names), default=0) <= 40
    legend: Legend = (
        {"orientation": "v", "x": 1.02, "y": 1}
        if beside
        else {"orientation": "h", "x": 0, "y": -0.18, "yanchor": "top"}
    )
    layout: Layout = {
        "xaxis": x_axis,
        "yaxis": y_axis,
        "font": FONT,
        "height": 460 if beside else 460 + 24 * len(points),
        "margin": {"t": 20, "r": 20},
        "legend": {**legend, "font": {"size": 12}},
    }
    ys = [p["y"] for p in points]
    if ys and min(ys) < 0 < max(ys):
        layout["shapes"] = [_zero_line()]
    return layout


def _zero_line() -> Shape:
    """A dashed line at y = 0 across the plot, where a margin's values cross zero."""
    return {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "y0": 0,
        "y1": 0,
        "line": {"color": "#d93025", "dash": "dash", "width": 1},
    }


def unique_names(names: list[str]) -> list[str]:
    """Legend names, HTML-escaped (plotly reads a subset of HTML in text) and made unique (`x`, `x#2`)."""
    seen: dict[str, int] = {}
    unique = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        unique.append(html.escape(name if seen[name] == 1 else f"{name}#{seen[name]}"))
    return unique


def figure_html(figure: Figure, index: int) -> str:
    """A div and the script that draws the figure into it (needs plotly_script() once on the page)."""
    spec = json.dumps(figure, default=str)  # NaN stays NaN, which is JavaScript
    spec = spec.replace("</", "<\\/")  # no name can close the script element early
    return (
        f"<div id='chart{index}' class='chart'></div><script>(function () {{ var f = {spec}; "
        f"Plotly.newPlot('chart{index}', f.data, f.layout, {{displaylogo: false, responsive: true}}); }})();</script>"
    )


@lru_cache(maxsize=1)
def plotly_script() -> str:
    """plotly.js itself, inlined, so report.html needs no network (read from the plotly package's data)."""
    source = (resources.files("plotly") / "package_data" / "plotly.min.js").read_text(
        encoding="utf-8"
    )
    return "<script>" + source.replace("</script", "<\\/script") + "</script>"


def chart_point(entry: PointJson) -> ChartPoint:
    """A chart entry's point (engine.publish.report._is_chart checked it) read once, here: x and y must be
    numbers (kept as written, so the figure's JSON is the entry's), `front` and `chosen` flags."""
    point: ChartPoint = {
        "label": str(entry["label"]),
        "x": _coord(entry["x"], "x"),
        "y": _coord(entry["y"], "y"),
    }
    if "front" in entry:
        point["front"] = bool(entry["front"])
    if "chosen" in entry:
        point["chosen"] = bool(entry["chosen"])
    return point


def _coord(value: Json, key: str) -> float:
    """A point's x or y, as written: a number in every chart entry report.py passes on."""
    if number(value) is None or not isinstance(value, (int, float)):
        raise TypeError(f"a chart point's {key} is not a number: {value!r}")
    return value


def _suffix(unit: str) -> str:
    return {"x": "x", "": ""}.get(unit, f" {unit}")
