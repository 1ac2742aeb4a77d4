"""report.json's form, as engine.publish.report writes it and the renderers and the headline read it: typed so
that each reader indexes a known key, not a JSON object of anything. A stage's section is a plugin's JSON
until report._well_formed has checked each table and chart against these types (their TypeGuards); a key
they do not name is carried into report.json as the plugin wrote it."""

from __future__ import annotations

from typing import TypedDict

from ortflow.engine.leaves.json_types import Json


class MeasuredJson(TypedDict):
    """One of the headline's two numbers (headline.Measured)."""

    metric: str
    title: str
    unit: str
    value: float


class HeadlineJson(TypedDict):
    """report.json's `headline` (headline.Headline)."""

    model: str
    how: str
    speed: MeasuredJson | None
    accuracy: MeasuredJson | None
    data: str
    verified: bool
    path: str
    refused: list[str]


class _Axis(TypedDict):
    metric: str
    title: str
    unit: str
    better: str


class AxisJson(_Axis, total=False):
    """One axis of the speed-against-accuracy chart: the measure the stage types declared for it, and the
    recipe's bound on it where one names it (report._add_constraints)."""

    bound: float


class TradeOffJson(TypedDict):
    x: AxisJson  # speed
    y: AxisJson  # accuracy


class _Table(TypedDict):
    title: str
    columns: list[Json]  # their names, as the plugin wrote them
    rows: list[list[Json]]


class TableJson(_Table, total=False):
    """A section's table; `terminal` False where its stage type keeps it out of the terminal."""

    terminal: bool


class _Point(TypedDict):
    label: str
    x: float  # a JSON number, kept as written (an int stays an int)
    y: float


class PointJson(_Point, total=False):
    """A scatter chart's point; its flags are read as truth values (charts.chart_point)."""

    front: Json  # on the Pareto front
    chosen: Json  # the search's pick


class _Chart(TypedDict):
    kind: str  # distribution | scatter
    title: str


class ChartJson(_Chart, total=False):
    """A section's chart: a distribution's `series` (values by model) or a scatter's `points`; its labels, units
    and y bound are the plugin's free values, read as text and number where drawn."""

    series: dict[str, list[float]]
    points: list[PointJson]
    x_label: Json
    x_unit: Json
    y_label: Json
    y_unit: Json
    y_bound: Json


class SectionParts(TypedDict):
    """What a renderer can draw of a stage's section (report._well_formed): its tables and charts."""

    tables: list[TableJson]
    charts: list[ChartJson]


class SectionJson(SectionParts):
    """A stage's section as report.json holds it, under the name of the stage that wrote it."""

    stage: str


class _Declared(TypedDict):
    units: dict[str, str]


class DeclaredJson(_Declared, total=False):
    """What report.json holds from the stage types' declarations (report._declared): each measure's unit, and
    the chart's axes where a stage type declares a measure for each."""

    trade_off: TradeOffJson


class OutputJson(TypedDict):
    """A stage's published output: its store digest, where it was published and its size."""

    digest: str
    path: str
    size: int


class MatrixJson(TypedDict):
    """A matrix instance's stage as written and the axis values that name it."""

    stage: str
    axes: dict[str, str]


class _Stage(TypedDict):
    stage: str


class StageEntry(_Stage, total=False):
    """A stage's entry in report.json's `stages` (report._stage_entry). `metrics` and `data_source` stay JSON:
    each stage type names its own metrics, and the data source is the stage's record as it wrote it."""

    folder: str
    type: str
    status: str
    seconds: float
    build_seconds: float | None
    key: str | None
    matrix: MatrixJson
    ran_on: dict[str, str] | None
    summary: str
    metrics: dict[str, Json]
    data_source: dict[str, Json] | None
    outputs: dict[str, OutputJson]
    error: str | None
    tolerated: bool
    dropped_from: list[str]


class _Report(TypedDict):
    recipe: str
    finished: str
    environment: dict[str, str]
    stages: list[StageEntry]


class ReportJson(_Report, total=False):
    """report.json. `sections`: each stage's report section, well formed; `units`: each declared measure's
    unit; `trade_off` only where the stage types declare a measure for each axis; `headline` None when the
    run measured neither."""

    recipe_path: str
    overrides: list[str]
    sources: dict[str, str]
    sections: list[SectionJson]
    units: dict[str, str]
    trade_off: TradeOffJson
    headline: HeadlineJson | None
