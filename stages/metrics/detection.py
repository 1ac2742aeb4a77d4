"""detection: does a candidate detector find what the reference finds?

Both models' outputs are decoded the same way (YOLO-style `[batch, 4 + classes, anchors]`, or separate boxes
and scores outputs), filtered by score, de-duplicated by per-class NMS; the reference's detections count as
the truth. A candidate detection matches an unmatched reference detection of the same class at IoU >= 0.5
(highest score first), which gives precision, recall and F1 at the score threshold, and the mean average
precision over the reference's classes (all-point interpolation, as COCO's and VOC's mAP@0.5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ortflow.api import Better, Metric, MetricName, Outputs, StageError


@dataclass
class Detections:
    """One image's detections: corners [n, 4] (x1, y1, x2, y2), class ids [n], scores [n]."""

    boxes: Any
    classes: Any
    scores: Any


class DetectionAgreement(Metric):
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
                "enum": ["channels_first", "anchors_first"],
                "default": "channels_first",
                "description": "channels_first: [batch, 4 + classes, anchors] (YOLOv8); anchors_first: transposed",
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

    def reads(self, params: dict[str, Any]) -> tuple[str, ...]:
        return (
            (params["output"],)
            if params.get("output")
            else (params.get("boxes", ""), params.get("scores", ""))
        )

    def check(self, params: dict[str, Any]) -> list[str]:
        if bool(params.get("output")) == bool(params.get("boxes") or params.get("scores")):
            return ["give either `output` (a YOLO-style head) or both `boxes` and `scores`"]
        if (
            params.get("boxes")
            and not params.get("scores")
            or params.get("scores")
            and not params.get("boxes")
        ):
            return ["`boxes` and `scores` go together"]
        return []

    def compute(
        self,
        reference: Outputs,
        candidate: Outputs,
        feeds: list[dict[str, Any]],
        params: dict[str, Any],
    ) -> dict[str, float]:
        import numpy as np

        truth = [d for i in range(len(feeds)) for d in _decoded(reference, i, params)]
        found = [d for i in range(len(feeds)) for d in _decoded(candidate, i, params)]
        matches = [_match(t, f, params["match_iou"]) for t, f in zip(truth, found)]
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


def _decoded(outputs: Outputs, index: int, params: dict[str, Any]) -> list[Detections]:
    """The detections of each image of feed `index` (a feed may hold a batch)."""
    import numpy as np

    if params.get("output"):
        head = np.asarray(outputs[params["output"]][index], dtype=np.float64)
        if head.ndim != 3:
            raise StageError(
                f"detection: output '{params['output']}' has shape {head.shape}; a YOLO-style head is "
                "[batch, 4 + classes, anchors] — set layout, or give boxes and scores"
            )
        rows = head.transpose(0, 2, 1) if params["layout"] == "channels_first" else head
        boxes, scores = rows[..., :4], rows[..., 4:]
        if params["objectness"]:
            scores = scores[..., 1:] * scores[..., :1]
    else:
        boxes = np.asarray(outputs[params["boxes"]][index], dtype=np.float64)
        scores = np.asarray(outputs[params["scores"]][index], dtype=np.float64)
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


def _image(boxes: Any, scores: Any, params: dict[str, Any]) -> Detections:
    import numpy as np

    classes, best = scores.argmax(axis=1), scores.max(axis=1)
    keep = best >= params["score_threshold"]
    boxes, classes, best = boxes[keep], classes[keep], best[keep]
    if params["box_format"] == "cxcywh":
        boxes = np.concatenate(
            [boxes[:, :2] - boxes[:, 2:] / 2, boxes[:, :2] + boxes[:, 2:] / 2], axis=1
        )
    kept: list[int] = []
    for label in np.unique(classes):
        members = np.flatnonzero(classes == label)
        order = members[np.argsort(-best[members], kind="stable")]
        while order.size:
            first, order = order[0], order[1:]
            kept.append(int(first))
            order = order[_iou(boxes[first], boxes[order]) < params["nms_iou"]]
    kept.sort(key=lambda i: -best[i])
    return Detections(boxes[kept], classes[kept], best[kept])


def _iou(box: Any, others: Any) -> Any:
    import numpy as np

    width = np.clip(np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]), 0, None)
    height = np.clip(np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]), 0, None)
    inter = width * height
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    return inter / np.maximum(area + areas - inter, 1e-12)


def _match(truth: Detections, found: Detections, threshold: float) -> Any:
    """For each of the candidate's detections (highest score first): whether it matched a reference detection
    of its class not matched before."""
    import numpy as np

    taken = np.zeros(len(truth.scores), dtype=bool)
    hits = np.zeros(len(found.scores), dtype=bool)
    for i in range(len(found.scores)):
        same = np.flatnonzero((truth.classes == found.classes[i]) & ~taken)
        if same.size:
            overlaps = _iou(found.boxes[i], truth.boxes[same])
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
