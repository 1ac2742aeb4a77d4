"""The accuracy metric `engine init` proposes (a `MetricChoice`): a task metric from what the model's outputs
mean (boxes, class scores, a probability, labels, dense maps), cosine where none fits or where random feeds
give the task metric nothing to judge. Each choice carries the comment that explains it in the recipe."""

from __future__ import annotations

from dataclasses import dataclass

from ortflow.engine.starter.drafts import MetricWith, StageWith
from ortflow.engine.starter.head_choice import ReadingChoice
from ortflow.engine.starter.roles import ModelKind, ModelRoles, OutputMeaning

DENSE_MAP_GATE = 0.9  # iou_mean: the marked regions of the mean sample keep 90% of their overlap

# validate_accuracy's parameters, the metric select constrains, its threshold, and the comment saying why
_Metric = tuple[StageWith, str, float, list[str]]


@dataclass
class MetricChoice:
    """How accuracy is judged: validate_accuracy's parameters (`outputs`, `metrics`) and the constraint select
    applies."""

    validate: StageWith
    name: str
    threshold: float
    comments: list[str]


def choose_metric(
    roles: ModelRoles,
    real_data: bool,
    min_accuracy: float | None,
    reading: ReadingChoice | None = None,
) -> MetricChoice:
    """A task metric from what the outputs mean; cosine where no task metric fits. `min_accuracy` (the
    user's) replaces the metric's usual threshold; `reading`: how a detection head is read (init chose it
    on the data)."""
    validate, name, threshold, comments = _task_metric(roles, real_data, reading)
    return MetricChoice(
        validate, name, threshold if min_accuracy is None else min_accuracy, comments
    )


def _task_metric(roles: ModelRoles, real_data: bool, reading: ReadingChoice | None) -> _Metric:
    """The first meaning that has a metric decides, in this order: detections, a transformer's embedding,
    class scores, one probability, labels only, dense maps; else cosine over the outputs."""
    detections = roles.outputs_with(OutputMeaning.DETECTIONS)
    if detections:
        return _detection_metric(detections[0].fact.name, real_data, reading)
    if roles.kind == ModelKind.TRANSFORMER:
        outs = _gated_outputs(roles, OutputMeaning.EMBEDDING, OutputMeaning.TOKEN_EMBEDDINGS)
        return (
            {"outputs": [*outs]},
            "cosine_mean",
            0.99,
            [
                f"{', '.join(outs)}: the embedding; accuracy is its mean cosine with the float model's"
            ],
        )
    found = _class_score_metric(roles) or _probability_metric(roles) or _label_metric(roles)
    if found:
        return found
    maps = roles.outputs_with(OutputMeaning.MAP)
    if maps:
        return _dense_map_metric([o.fact.name for o in maps], real_data)
    outs = _gated_outputs(roles, OutputMeaning.MAP, OutputMeaning.EMBEDDING, OutputMeaning.OTHER)
    return (
        {"outputs": [*outs]},
        "cosine_mean",
        0.99,
        [
            f"{', '.join(outs)}: no task metric fits these outputs, so accuracy is their mean cosine with the float model's"
        ],
    )


def _gated_outputs(roles: ModelRoles, *meanings: OutputMeaning) -> list[str]:
    for meaning in meanings:
        found = [o.fact.name for o in roles.outputs_with(meaning)]
        if found:
            return found
    return [o.fact.name for o in roles.outputs if o.meaning != OutputMeaning.STATE]


def _detection_metric(out: str, real_data: bool, reading: ReadingChoice | None) -> _Metric:
    """A YOLO head is judged by the boxes it finds (det_f1) on real images; random images give no boxes to
    compare, so there the gate is the head's cosine (the detection metric is still reported)."""
    detection: MetricWith = {"output": out, "score_threshold": 0.25}
    validate: StageWith = {"outputs": [out], "metrics": {"detection": detection}}
    if real_data and reading is not None and reading.reading is None:
        return (validate, "cosine_mean", 0.99, reading.comments(out))
    if real_data and reading is not None and reading.reading is not None:
        reading.reading.write_params(detection)
        return (
            validate,
            "det_f1",
            0.8,
            [
                *reading.comments(out),
                "accuracy is whether the quantized model finds the float model's boxes (det_f1; det_map50 is",
                "reported too)",
            ],
        )
    if real_data:
        return (
            validate,
            "det_f1",
            0.8,
            [
                f"'{out}' looks like a YOLO head [batch, 4 + classes, anchors]: accuracy is whether the quantized",
                "model finds the float model's boxes (det_f1; det_map50 is reported too)",
            ],
        )
    return (
        validate,
        "cosine_mean",
        0.99,
        [
            f"'{out}' looks like a YOLO head; random images give no boxes to compare, so the gate is the",
            "output's cosine. With real images (engine init --data FOLDER) the gate is det_f1 >= 0.8",
        ],
    )


def _class_score_metric(roles: ModelRoles) -> _Metric | None:
    scores = roles.outputs_with(OutputMeaning.CLASS_SCORES)
    if not scores:
        return None
    outs = [o.fact.name for o in scores]
    return (
        {"outputs": [*outs], "metrics": {"exact": {"outputs": [*outs], "argmax_axis": -1}}},
        "samples_unchanged",
        0.9,
        [
            f"{', '.join(outs)}: class scores; accuracy is the share of samples whose top class is unchanged"
            + (
                " at every position (a recognised text unchanged)"
                if any(o.fact.rank == 3 for o in scores)
                else ""
            )
        ],
    )


def _probability_metric(roles: ModelRoles) -> _Metric | None:
    probability = roles.outputs_with(OutputMeaning.PROBABILITY)
    if not probability:
        return None
    outs = [o.fact.name for o in probability]
    return (
        {"outputs": [*outs], "metrics": {"exact": {"outputs": [*outs], "threshold": 0.5}}},
        "label_agreement",
        0.97,
        [
            f"{', '.join(outs)}: one probability a sample; accuracy is the share of decisions at 0.5 unchanged"
        ],
    )


def _label_metric(roles: ModelRoles) -> _Metric | None:
    """Integer labels are judged exactly, where they are all the model outputs (besides a state)."""
    labels = roles.outputs_with(OutputMeaning.LABELS)
    if not labels or not all(
        o.meaning in (OutputMeaning.LABELS, OutputMeaning.STATE) for o in roles.outputs
    ):
        return None
    outs = [o.fact.name for o in labels]
    return (
        {"outputs": [*outs], "metrics": {"exact": {"outputs": [*outs]}}},
        "samples_unchanged",
        0.9,
        [
            f"{', '.join(outs)}: integer labels; accuracy is the share of samples whose labels are unchanged"
        ],
    )


def _dense_map_metric(outs: list[str], real_data: bool) -> _Metric:
    """Maps ([batch, C, H, W] probability maps, masks) are used by the regions they mark at a threshold: IoU of
    those regions, which cosine over the whole map hides (mostly background, which shifts little)."""
    validate: StageWith = {"outputs": [*outs], "metrics": {"dense_map": {"outputs": [*outs]}}}
    what = [
        f"{', '.join(outs)}: a dense map [batch, C, H, W] (a probability map or mask); accuracy is the IoU of",
        "the regions both models mark at a threshold (dense_map's default, auto: 0.5 for values in [0, 1], else 0;",
        "set `threshold:` to the one your application uses)",
    ]
    if not real_data:
        return (
            validate,
            "cosine_mean",
            0.99,
            [
                *what,
                "random images mark no real regions, so the gate is the map's cosine; with",
                f"real images (engine init --data FOLDER) it is iou_mean >= {DENSE_MAP_GATE}",
            ],
        )
    return (
        validate,
        "iou_mean",
        DENSE_MAP_GATE,
        [
            *what,
            f"gate: iou_mean >= {DENSE_MAP_GATE}, the mean sample's regions; iou_min (the worst sample) is reported, not",
            "gated: a sample that marks few pixels swings its IoU on a handful of them",
        ],
    )
