"""The answer a report leads with: which model to ship, how much faster it is, how accurate and on what data,
and where its file is. A reader opens report.html to learn that, not to read the stage table first; report.json
keeps it (`headline`) so a script reads the same answer the page shows."""

from __future__ import annotations

from dataclasses import dataclass, field

from ortflow.engine.leaves.json_types import Json, number, obj, text
from ortflow.engine.publish.report_types import (
    AxisJson,
    HeadlineJson,
    MeasuredJson,
    ReportJson,
    StageEntry,
)


@dataclass(frozen=True)
class Measured:
    """One of the headline's two numbers: the value and what it measures, as the stage types declared it."""

    metric: str
    title: str
    unit: str
    value: float

    def to_json(self) -> MeasuredJson:
        return {"metric": self.metric, "title": self.title, "unit": self.unit, "value": self.value}


@dataclass(frozen=True)
class Headline:
    """The chosen model and the facts a reader needs to act on it. `how` says why this model (a select stage
    chose it, or it is the fastest of those measured for accuracy too); `data` names the data its accuracy
    rests on (real samples or random feeds), `verified` is False unless that data was real."""

    model: str
    how: str
    speed: Measured | None
    accuracy: Measured | None
    data: str
    verified: bool
    path: str
    # Where the chosen model is the original (a recipe input) while candidates were refused: each refusal,
    # "stage: why", so a headline of "1.00x" says why nothing faster was kept.
    refused: list[str] = field(default_factory=list)

    def to_json(self) -> HeadlineJson:
        """report.json's `headline`: the fields in their order here (as dataclasses.asdict wrote them)."""
        return {
            "model": self.model,
            "how": self.how,
            "speed": self.speed.to_json() if self.speed is not None else None,
            "accuracy": self.accuracy.to_json() if self.accuracy is not None else None,
            "data": self.data,
            "verified": self.verified,
            "path": self.path,
            "refused": list(self.refused),
        }

    @classmethod
    def from_json(cls, data: HeadlineJson) -> Headline:
        return cls(
            data["model"],
            data["how"],
            _measured_json(data["speed"]),
            _measured_json(data["accuracy"]),
            data["data"],
            data["verified"] is True,
            data["path"],
            list(data["refused"]),
        )


def _measured_json(value: MeasuredJson | None) -> Measured | None:
    if not value:
        return None
    return Measured(value["metric"], value["title"], value["unit"], value["value"])


@dataclass(frozen=True)
class TradeOffAxis:
    """One axis of report.json's `trade_off` (engine.publish.report._declared): the measure it plots."""

    metric: str
    title: str
    unit: str
    better: str
    bound: (
        float | None
    )  # the recipe's constraint on the measure, where it sets one (report._add_constraints)

    @classmethod
    def from_json(cls, axis: AxisJson) -> TradeOffAxis:
        return cls(
            axis["metric"], axis["title"], axis["unit"], axis["better"], number(axis.get("bound"))
        )


@dataclass(frozen=True)
class StageResult:
    """A stage's entry in report.json's `stages`, as the headline reads it. `metrics` stays JSON: each stage
    type names its own (one number for the stage, or one per model)."""

    stage: str
    type: str
    status: str
    seconds: float
    build_seconds: float | None  # a cached stage's: those of the run that built it
    summary: str
    error: str  # "" when none
    dropped_from: tuple[str, ...]  # a refused optional stage's dependents that went on without it
    metrics: dict[str, Json]
    data_source: dict[str, Json]  # {} when the stage recorded none
    outputs: dict[str, str]  # port: the path its file was published at

    @classmethod
    def from_json(cls, entry: StageEntry) -> StageResult:
        outputs = entry.get("outputs") or {}
        return cls(
            entry["stage"],
            text(entry.get("type")),
            text(entry.get("status")),
            number(entry.get("seconds")) or 0.0,
            number(entry.get("build_seconds")),
            text(entry.get("summary")),
            str(entry["error"]) if entry.get("error") else "",
            tuple(entry.get("dropped_from") or ()),
            obj(entry.get("metrics")),
            obj(entry.get("data_source")),
            {port: out.get("path", "") for port, out in outputs.items()},
        )


@dataclass(frozen=True)
class ReportFacts:
    """What the headline and the trade-off chart read from report.json, parsed once (ReportFacts.of)."""

    stages: tuple[StageResult, ...]
    x: TradeOffAxis | None  # speed; both axes or neither
    y: TradeOffAxis | None  # accuracy

    @classmethod
    def of(cls, report: ReportJson) -> ReportFacts:
        axes = report.get("trade_off")
        x, y = (TradeOffAxis.from_json(axes[side]) if axes else None for side in ("x", "y"))
        return cls(tuple(StageResult.from_json(s) for s in report["stages"]), x, y)


def trade_off(report: ReportJson) -> list[tuple[str, float, float]]:
    """(model, x, y) for every model with both of the measures the stage types declared for the speed-against-
    accuracy chart (report.json's `trade_off`: e.g. a benchmark's speedup and a validate_accuracy's mean cosine)."""
    return trade_off_points(ReportFacts.of(report))


def trade_off_points(facts: ReportFacts) -> list[tuple[str, float, float]]:
    if facts.x is None or facts.y is None:
        return []
    found: dict[str, dict[str, float]] = {"x": {}, "y": {}}
    metric = {"x": facts.x.metric, "y": facts.y.metric}
    for stage in facts.stages:
        for side, values in found.items():
            per_model = stage.metrics.get(metric[side])
            if isinstance(per_model, dict):
                values.update({k: v for k, v in _numbers(per_model).items()})
    return [(m, found["x"][m], found["y"][m]) for m in sorted(set(found["x"]) & set(found["y"]))]


def find_headline(report: ReportJson) -> Headline | None:
    """The chosen model: the one a stage chose (its metrics name it `chosen`, as select's do), else the best by
    the speed measure among the models measured for accuracy as well; None when the run measured neither."""
    facts = ReportFacts.of(report)
    points = {m: (x, y) for m, x, y in trade_off_points(facts)}
    chooser = next((s for s in facts.stages if isinstance(s.metrics.get("chosen"), str)), None)
    if chooser is not None:
        model = text(chooser.metrics["chosen"])
        how = f"chosen by stage {chooser.stage} ({chooser.type})"
    elif points and facts.x is not None:
        lower = facts.x.better == "lower"
        model = (min if lower else max)(points, key=lambda m: points[m][0])
        best = "lowest" if lower else "highest"
        how = f"the {best} {facts.x.title} of the {len(points)} models whose accuracy was measured"
    else:
        return None
    source = _data_source(facts, model, chooser)
    return Headline(
        model=model,
        how=how,
        speed=_measured(facts, facts.x, model, chooser),
        accuracy=_measured(facts, facts.y, model, chooser),
        data=text(source.get("label"), "data not recorded"),
        verified=bool(source.get("verified")),
        path=_model_path(facts, model, chooser),
        refused=_refusals(facts) if _is_input(facts, model) else [],
    )


REFUSED = (
    "gate failed",
    "failed",
)  # a stage's status when it refused (its gate, or its own verdict)


def _is_input(facts: ReportFacts, model: str) -> bool:
    """Whether the chosen model is one no stage built (a recipe input: the original)."""
    return not any(s.stage == model for s in facts.stages)


def _refusals(facts: ReportFacts) -> list[str]:
    """Each stage that refused its output, with the first sentence of why (a gate's verdict runs long)."""
    return [
        f"{stage.stage}: {stage.status}: {stage.error.split('. ')[0]}"
        for stage in facts.stages
        if stage.status in REFUSED and stage.error
    ]


def _measured(
    facts: ReportFacts, axis: TradeOffAxis | None, model: str, chooser: StageResult | None
) -> Measured | None:
    """The model's value of one trade-off measure: from the stage that measured it per model, else from the
    choosing stage's `chosen_<metric>`."""
    if axis is None:
        return None
    for stage in facts.stages:
        per_model = stage.metrics.get(axis.metric)  # per model, or one number for the stage
        value = number(per_model.get(model)) if isinstance(per_model, dict) else None
        if value is not None:
            return Measured(axis.metric, axis.title, axis.unit, value)
    chosen = chooser.metrics.get(f"chosen_{axis.metric}") if chooser is not None else None
    value = number(chosen)
    return Measured(axis.metric, axis.title, axis.unit, value) if value is not None else None


def _data_source(facts: ReportFacts, model: str, chooser: StageResult | None) -> dict[str, Json]:
    """The data source recorded by the stage that measured the model's accuracy (or by the choosing stage)."""
    for stage in facts.stages:
        per_model = stage.metrics.get(facts.y.metric) if facts.y is not None else None
        if isinstance(per_model, dict) and model in per_model and stage.data_source:
            return stage.data_source
    return chooser.data_source if chooser is not None else {}


def _model_path(facts: ReportFacts, model: str, chooser: StageResult | None) -> str:
    """Where the chosen model's file was published: the choosing stage's copy, else the output of the stage
    the model is named after; empty for a recipe input (not published)."""
    stages = [chooser] if chooser else [s for s in facts.stages if s.stage == model]
    for stage in stages:
        found = stage.outputs.get("model") or next(
            (path for path in stage.outputs.values() if path.endswith(".onnx")), None
        )
        if found:
            return found
    return ""


def _numbers(per_model: dict[str, Json]) -> dict[str, float]:
    """The entries of a per-model metric that are numbers (true/false are not)."""
    found = {model: number(value) for model, value in per_model.items()}
    return {model: value for model, value in found.items() if value is not None}
