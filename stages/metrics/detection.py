"""detection: does a candidate detector find what the reference finds?

Both models' outputs are decoded the same way (YOLO-style `[batch, 4 + classes, anchors]`, its transpose, a raw
YOLOX grid, or separate boxes and scores outputs), filtered by score, de-duplicated by per-class NMS; the reference's detections count as
the truth. A candidate detection matches an unmatched reference detection of the same class at IoU >= 0.5
(highest score first), which gives precision, recall and F1 at the score threshold, and the mean average
precision over the reference's classes (all-point interpolation, as COCO's and VOC's mAP@0.5).

Before judging, the reference's boxes of a head (`output`) are checked for plausibility (inside the image, of a
real size, not hundreds an image; engine.leaves.detection_heads): a wrong reading agrees with itself, so a metric that
compared two misread heads would pass or fail candidates on noise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ortflow.api import (
    Better,
    Feed,
    HeadReading,
    MetricName,
    Outputs,
    StageError,
    box_iou,
    confident_boxes,
    decode_head,
    feed_image_size,
    plausibility,
)
from ortflow.stages.metrics.settings_metric import SettingsMetric


@dataclass(frozen=True)
class DetectionSettings:
    """detection's parameters (its params_schema), read once per call from the validated mapping; an empty
    `output`, `boxes`, `scores` or `image_size` is one not given."""

    output: str = ""
    layout: str = "channels_first"
    strides: tuple[int, ...] = (8, 16, 32)
    image_size: tuple[int, ...] = ()
    objectness: bool = False
    boxes: str = ""
    scores: str = ""
    box_format: str = "cxcywh"
    score_threshold: float = 0.25
    nms_iou: float = 0.45
    match_iou: float = 0.5


@dataclass
class Detections:
    """One image's detections: corners [n, 4] (x1, y1, x2, y2), class ids [n], scores [n]."""

    boxes: Any
    classes: Any
    scores: Any


class DetectionAgreement(SettingsMetric[DetectionSettings]):
    type = "detection"
    description = (
        "Detections of the candidate against the reference's (same decoding, score threshold and NMS): "
        "precision, recall, F1 and mAP@0.5, matched by class at an IoU threshold."
    )
    names = (
        MetricName(
            "det_precision",
            Better.HIGHER,
            "share of the candidate's detections the reference also made",
        ),
        MetricName(
            "det_recall",
            Better.HIGHER,
            "share of the reference's detections the candidate also made",
        ),
        MetricName("det_f1", Better.HIGHER, "harmonic mean of det_precision and det_recall"),
        MetricName(
            "det_map50",
            Better.HIGHER,
            "mean average precision at IoU 0.5, the reference's detections as truth",
        ),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "output": {
                "type": "string",
                "description": "a YOLO-style output: [batch, 4 + classes, anchors] (layout)",
            },
            "layout": {
                "enum": ["channels_first", "anchors_first", "grid"],
                "default": "channels_first",
                "description": "channels_first: [batch, 4 + classes, anchors] (YOLOv8); anchors_first: transposed; "
                "grid: a raw anchor-free head [batch, anchors, 5 + classes] (YOLOX: cell offsets, log sizes, "
                "decoded with `strides`)",
            },
            "strides": {
                "type": "array",
                "items": {"type": "integer", "minimum": 1},
                "minItems": 1,
                "default": [8, 16, 32],
                "description": "layout grid: the strides of the head's levels (a P6 model: [8, 16, 32, 64])",
            },
            "image_size": {
                "type": "array",
                "items": {"type": "integer", "minimum": 1},
                "minItems": 2,
                "maxItems": 2,
                "description": "[height, width] the boxes are in (default: the image input's size)",
            },
            "objectness": {
                "type": "boolean",
                "default": False,
                "description": "a score at index 4 before the class scores (YOLOv5, v7): class score x objectness",
            },
            "boxes": {
                "type": "string",
                "description": "instead of `output`: an output of boxes [batch, n, 4]",
            },
            "scores": {
                "type": "string",
                "description": "with `boxes`: scores [batch, n, classes] or [batch, n]",
            },
            "box_format": {
                "enum": ["cxcywh", "xyxy"],
                "default": "cxcywh",
                "description": "centre and size (YOLO heads) or corners",
            },
            "score_threshold": {
                "type": "number",
                "minimum": 0,
                "default": 0.25,
                "description": "detections below it are dropped",
            },
            "nms_iou": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "default": 0.45,
                "description": "per-class NMS overlap",
            },
            "match_iou": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "default": 0.5,
                "description": "IoU that counts as found",
            },
        },
    }

    settings = DetectionSettings

    def outputs_read(self, settings: DetectionSettings) -> tuple[str, ...]:
        return (settings.output,) if settings.output else (settings.boxes, settings.scores)

    def problems(self, settings: DetectionSettings) -> list[str]:
        if bool(settings.output) == bool(settings.boxes or settings.scores):
            return ["give either `output` (a YOLO-style head) or both `boxes` and `scores`"]
        if settings.boxes and not settings.scores or settings.scores and not settings.boxes:
            return ["`boxes` and `scores` go together"]
        return []

    def measure(
        self,
        reference: Outputs,
        candidate: Outputs,
        feeds: list[Feed],
        settings: DetectionSettings,
    ) -> dict[str, float]:
        import numpy as np

        truth = [d for i in range(len(feeds)) for d in _decoded(reference, i, settings, feeds[i])]
        _check_reference(truth, settings, feeds)
        found = [d for i in range(len(feeds)) for d in _decoded(candidate, i, settings, feeds[i])]
        matches = [_match(t, f, settings.match_iou) for t, f in zip(truth, found)]
        tp = sum(int(m.sum()) for m in matches)
        predicted = sum(len(f.scores) for f in found)
        expected = sum(len(t.scores) for t in truth)
        precision = tp / predicted if predicted else 1.0
        recall = tp / expected if expected else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        return {
            "det_precision": precision,
            "det_recall": recall,
            "det_f1": f1,
            "det_map50": _mean_average_precision(truth, found, matches, np),
        }


def _image_size(params: DetectionSettings, feed: Feed) -> tuple[int, int] | None:
    """[height, width] of the boxes: `image_size`, else the feed's image (a 4-D array, NCHW or NHWC)."""
    if params.image_size:
        return params.image_size[0], params.image_size[1]
    return feed_image_size(feed)


def _check_reference(truth: list[Detections], params: DetectionSettings, feeds: list[Feed]) -> None:
    """The reference's boxes of a head must be plausible: else the reading is wrong, and every comparison
    with it is noise. No box at all passes (random images find nothing)."""
    size = _image_size(params, feeds[0]) if params.output and feeds else None
    if size is None or not any(len(t.scores) for t in truth):
        return
    found = plausibility([t.boxes for t in truth], size)
    if not found.plausible:
        raise StageError(
            f"detection: the reference's boxes of '{params.output}' read as layout "
            f"{params.layout}, objectness {str(params.objectness).lower()} are not plausible "
            f"({found.describe()}) — set `layout` (channels_first, anchors_first, grid) and `objectness` to "
            "how the head is laid out (engine init chooses them on real images)"
        )


def _decoded(
    outputs: Outputs, index: int, params: DetectionSettings, feed: Feed
) -> list[Detections]:
    """The detections of each image of feed `index` (a feed may hold a batch)."""
    import numpy as np

    if params.output:
        reading = HeadReading(params.layout, params.objectness, params.strides or (8, 16, 32))
        try:
            boxes, scores = decode_head(
                outputs[params.output][index], reading, _image_size(params, feed)
            )
        except ValueError as exc:
            raise StageError(
                f"detection: output '{params.output}' read as {reading.describe()}: {exc} — set "
                "layout (channels_first, anchors_first, grid), or give boxes and scores"
            ) from exc
    else:
        boxes = np.asarray(outputs[params.boxes][index], dtype=np.float64)
        scores = np.asarray(outputs[params.scores][index], dtype=np.float64)
        scores = scores[..., None] if scores.ndim == 2 else scores
        if boxes.ndim != 3 or boxes.shape[-1] != 4 or scores.shape[:2] != boxes.shape[:2]:
            raise StageError(
                f"detection: boxes {boxes.shape} and scores {scores.shape} do not fit "
                "([batch, n, 4] and [batch, n, classes])"
            )
    if scores.shape[-1] == 0:
        raise StageError(
            "detection: the output has no class scores after the 4 box values — check layout"
        )
    return [_image(b, s, params) for b, s in zip(boxes, scores)]


def _image(boxes: Any, scores: Any, params: DetectionSettings) -> Detections:
    corners, classes, best = confident_boxes(
        boxes, scores, params.score_threshold, params.nms_iou, params.box_format
    )
    return Detections(corners, classes, best)


def _match(truth: Detections, found: Detections, threshold: float) -> Any:
    """For each of the candidate's detections (highest score first): whether it matched a reference detection
    of its class not matched before."""
    import numpy as np

    taken = np.zeros(len(truth.scores), dtype=bool)
    hits = np.zeros(len(found.scores), dtype=bool)
    for i in range(len(found.scores)):
        same = np.flatnonzero((truth.classes == found.classes[i]) & ~taken)
        if same.size:
            overlaps = box_iou(found.boxes[i], truth.boxes[same])
            best = int(np.argmax(overlaps))
            if overlaps[best] >= threshold:
                taken[same[best]] = hits[i] = True
    return hits


def _mean_average_precision(
    truth: list[Detections], found: list[Detections], matches: list[Any], np: Any
) -> float:
    labels = np.unique(np.concatenate([t.classes for t in truth])) if truth else np.array([])
    if labels.size == 0:
        return 1.0 if not any(len(f.scores) for f in found) else 0.0
    precisions = []
    for label in labels:
        expected = sum(int(np.sum(t.classes == label)) for t in truth)
        scores = np.concatenate([f.scores[f.classes == label] for f in found])
        hits = np.concatenate([m[f.classes == label] for f, m in zip(found, matches)])
        order = np.argsort(-scores, kind="stable")
        tp = np.cumsum(hits[order])
        recall = np.concatenate([[0.0], tp / expected])
        precision = np.concatenate([[1.0], tp / np.arange(1, len(order) + 1)])
        envelope = np.maximum.accumulate(precision[::-1])[::-1]  # all-point interpolation
        precisions.append(float(np.sum((recall[1:] - recall[:-1]) * envelope[1:])))
    return float(np.mean(precisions))
