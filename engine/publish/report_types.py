"""report.json's form, as engine.publish.report writes it and the renderers and the headline read it: typed so
that each reader indexes a known key, not a JSON object of anything. The stages' sections stay JSON objects:
a plugin writes them, report._well_formed keeps what a renderer can draw, and every other key it wrote is
carried into report.json as written."""

from __future__ import annotations

from typing import TypedDict

from ortflow.engine.leaves.json_types import Json, JsonObject


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
    """report.json. `sections` are the stages' report sections (a plugin's free JSON, kept as written once
    well formed); `units` each declared measure's unit; `trade_off` only where the stage types declare a
    measure for each axis; `headline` None when the run measured neither."""

    recipe_path: str
    overrides: list[str]
    sources: dict[str, str]
    sections: list[JsonObject]
    units: dict[str, str]
    trade_off: TradeOffJson
    headline: HeadlineJson | None
