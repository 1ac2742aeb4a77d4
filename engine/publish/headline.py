"""The answer a report leads with: which model to ship, how much faster it is, how accurate and on what data,
and where its file is. A reader opens report.html to learn that, not to read the stage table first; report.json
keeps it (`headline`) so a script reads the same answer the page shows."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ortflow.engine.leaves.json_types import Json, JsonObject, number, obj, objects, text


@dataclass(frozen=True)
class Measured:
    """One of the headline's two numbers: the value and what it measures, as the stage types declared it."""

    metric: str
    title: str
    unit: str
    value: float


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

    def to_json(self) -> JsonObject:
        return asdict(self)

    @classmethod
    def from_json(cls, data: JsonObject) -> Headline:
        refused = data.get("refused")
        return cls(
            text(data.get("model")),
            text(data.get("how")),
            _measured_json(data.get("speed")),
            _measured_json(data.get("accuracy")),
            text(data.get("data")),
            data.get("verified") is True,
            text(data.get("path")),
            [str(r) for r in refused] if isinstance(refused, list) else [],
        )


def _measured_json(value: Json) -> Measured | None:
    found = obj(value)
    if not found:
        return None
    metric, title, unit = (text(found[k]) for k in ("metric", "title", "unit"))
    return Measured(metric, title, unit, number(found["value"]) or 0.0)


def trade_off(report: JsonObject) -> list[tuple[str, float, float]]:
    """(model, x, y) for every model with both of the measures the stage types declared for the speed-against-
    accuracy chart (report.json's `trade_off`: e.g. a benchmark's speedup and a validate_accuracy's mean cosine)."""
    axes = obj(report.get("trade_off"))
    if not axes:
        return []
    found: dict[str, dict[str, float]] = {"x": {}, "y": {}}
    for stage in objects(report["stages"]):
        metrics = obj(stage.get("metrics"))
        for side, values in found.items():
            per_model = metrics.get(text(obj(axes[side])["metric"]))
            if isinstance(per_model, dict):
                values.update({k: v for k, v in _numbers(per_model).items()})
    return [(m, found["x"][m], found["y"][m]) for m in sorted(set(found["x"]) & set(found["y"]))]


def find_headline(report: JsonObject) -> Headline | None:
    """The chosen model: the one a stage chose (its metrics name it `chosen`, as select's do), else the best by
    the speed measure among the models measured for accuracy as well; None when the run measured neither."""
    axes = obj(report.get("trade_off"))
    points = {m: (x, y) for m, x, y in trade_off(report)}
    chooser = next(
        (
            s
            for s in objects(report["stages"])
            if isinstance(obj(s.get("metrics")).get("chosen"), str)
        ),
        None,
    )
    if chooser is not None:
        model = text(obj(chooser["metrics"])["chosen"])
        how = f"chosen by stage {text(chooser['stage'])} ({text(chooser['type'])})"
    elif points and axes:
        lower = obj(axes["x"]).get("better") == "lower"
        model = (min if lower else max)(points, key=lambda m: points[m][0])
        best = "lowest" if lower else "highest"
        how = f"the {best} {text(obj(axes['x'])['title'])} of the {len(points)} models whose accuracy was measured"
    else:
        return None
    speed = _measured(report, obj(axes.get("x")), model, chooser)
    accuracy = _measured(report, obj(axes.get("y")), model, chooser)
    source = _data_source(report, obj(axes.get("y")), model, chooser)
    return Headline(
        model=model,
        how=how,
        speed=speed,
        accuracy=accuracy,
        data=text(source.get("label"), "data not recorded"),
        verified=bool(source.get("verified")),
        path=_model_path(report, model, chooser),
        refused=_refusals(report) if _is_input(report, model) else [],
    )


REFUSED = (
    "gate failed",
    "failed",
)  # a stage's status when it refused (its gate, or its own verdict)


def _is_input(report: JsonObject, model: str) -> bool:
    """Whether the chosen model is one no stage built (a recipe input: the original)."""
    return not any(s["stage"] == model for s in objects(report["stages"]))


def _refusals(report: JsonObject) -> list[str]:
    """Each stage that refused its output, with the first sentence of why (a gate's verdict runs long)."""
    found = []
    for stage in objects(report["stages"]):
        status = text(stage.get("status"))
        if status in REFUSED and stage.get("error"):
            why = str(stage["error"]).split(". ")[0]
            found.append(f"{text(stage['stage'])}: {status}: {why}")
    return found


def _measured(
    report: JsonObject, axis: JsonObject, model: str, chooser: JsonObject | None
) -> Measured | None:
    """The model's value of one trade-off measure: from the stage that measured it per model, else from the
    choosing stage's `chosen_<metric>`."""
    if not axis:
        return None
    metric, title, unit = (text(axis[name]) for name in ("metric", "title", "unit"))
    for stage in objects(report["stages"]):
        per_model = obj(stage.get("metrics")).get(metric)  # per model, or one number for the stage
        value = number(per_model.get(model)) if isinstance(per_model, dict) else None
        if value is not None:
            return Measured(metric, title, unit, value)
    value = number(obj(obj(chooser).get("metrics")).get(f"chosen_{metric}"))
    return Measured(metric, title, unit, value) if value is not None else None


def _data_source(
    report: JsonObject, axis: JsonObject, model: str, chooser: JsonObject | None
) -> JsonObject:
    """The data source recorded by the stage that measured the model's accuracy (or by the choosing stage)."""
    for stage in objects(report["stages"]):
        per_model = obj(stage.get("metrics")).get(text(axis["metric"])) if axis else None
        if isinstance(per_model, dict) and model in per_model and stage.get("data_source"):
            return obj(stage["data_source"])
    return obj(obj(chooser).get("data_source"))


def _model_path(report: JsonObject, model: str, chooser: JsonObject | None) -> str:
    """Where the chosen model's file was published: the choosing stage's copy, else the output of the stage
    the model is named after; empty for a recipe input (not published)."""
    stages = [chooser] if chooser else [s for s in objects(report["stages"]) if s["stage"] == model]
    for stage in stages:
        outputs = obj(stage.get("outputs"))
        found = outputs.get("model") or next(
            (o for o in outputs.values() if str(obj(o).get("path", "")).endswith(".onnx")), None
        )
        if found:
            return str(obj(found)["path"])
    return ""


def _numbers(per_model: JsonObject) -> dict[str, float]:
    """The entries of a per-model metric that are numbers (true/false are not)."""
    found = {model: number(value) for model, value in per_model.items()}
    return {model: value for model, value in found.items() if value is not None}
