"""The Plotly figures report.html draws (engine.publish.charts), as the typed dicts plotly.js reads: only the
keys the report sets, so a misspelt key or a number where plotly wants text fails mypy, not the reader's browser.
They stay dicts because the figure is written into the page as JSON (charts.figure_html) exactly as built."""

from __future__ import annotations

from typing import TypedDict


class Font(TypedDict, total=False):
    family: str
    size: int


class Line(TypedDict, total=False):
    dash: str
    color: str
    width: int


class Marker(TypedDict, total=False):
    color: str
    size: int
    opacity: float
    symbol: str
    line: Line


class AxisTitle(TypedDict):
    text: str


class Axis(TypedDict, total=False):
    title: AxisTitle
    ticksuffix: str
    automargin: bool
    zeroline: bool
    rangemode: str
    autorange: str
    range: list[float]


class Legend(TypedDict, total=False):
    orientation: str
    x: float
    y: float
    yanchor: str
    font: Font


class Margin(TypedDict):
    t: int
    r: int


class Shape(TypedDict):
    type: str
    xref: str
    x0: float
    x1: float
    y0: float
    y1: float
    line: Line


class Layout(TypedDict, total=False):
    xaxis: Axis
    yaxis: Axis
    showlegend: bool
    height: int
    margin: Margin
    font: Font
    legend: Legend
    shapes: list[Shape]


class Trace(TypedDict, total=False):
    """A box (distribution_figure), a point or the Pareto front's line (scatter_figure)."""

    type: str
    mode: str
    x: list[float]
    y: list[float]
    name: str
    orientation: str
    boxpoints: bool
    marker: Marker
    line: Line
    hoverinfo: str
    hovertemplate: str


class Figure(TypedDict):
    data: list[Trace]
    layout: Layout


class _PointCoordinates(TypedDict):
    label: str
    x: float
    y: float


class ChartPoint(_PointCoordinates, total=False):
    """A scatter chart's point as a report section's chart entry gives it (engine.publish.report._scatter):
    `front` on the Pareto front, `chosen` the search's pick. x and y keep the JSON number as written (an int
    stays an int), so the figure's JSON is the one the entry held."""

    front: bool
    chosen: bool
