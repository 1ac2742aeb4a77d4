"""YOLOv8 detections for checking a quantized detector against its float model: letterboxed photos,
decoded boxes with per-class greedy NMS, and recall of the float model's detections (same class, IoU > 0.5).
Used by tests/test_detector.py and bench/quantization_traps.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort


def letterboxed(path: Path, size: int = 320) -> np.ndarray:
    from PIL import Image

    image = Image.open(path).convert("RGB")
    scale = size / max(image.size)
    image = image.resize(
        (max(1, round(image.size[0] * scale)), max(1, round(image.size[1] * scale))), Image.BILINEAR
    )
    canvas = Image.new("RGB", (size, size))
    canvas.paste(image, ((size - image.size[0]) // 2, (size - image.size[1]) // 2))
    return (np.asarray(canvas, np.float32) / 255).transpose(2, 0, 1)[None]


def iou(a: np.ndarray, b: np.ndarray) -> float:
    width = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    height = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = width * height
    return inter / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter + 1e-9)


def detections(output: np.ndarray, threshold: float = 0.2) -> list[tuple[int, np.ndarray]]:
    """YOLOv8 decoding: [4 + classes, anchors] -> (class, xyxy) after per-class greedy NMS at IoU 0.45."""
    boxes, scores = output[0, :4].T, output[0, 4:].T
    classes, best = scores.argmax(1), scores.max(1)
    keep = best > threshold
    boxes, classes, best = boxes[keep], classes[keep], best[keep]
    corners = np.c_[boxes[:, :2] - boxes[:, 2:] / 2, boxes[:, :2] + boxes[:, 2:] / 2]
    order, kept = list(best.argsort()[::-1]), []
    while order:
        first = order.pop(0)
        kept.append((int(classes[first]), corners[first]))
        order = [
            i
            for i in order
            if classes[i] != classes[first] or iou(corners[first], corners[i]) < 0.45
        ]
    return kept


def recall(reference: Path, candidate: Path, folder: Path) -> tuple[int, int]:
    """How many of the reference model's detections the candidate finds (same class, IoU > 0.5)."""
    ours = ort.InferenceSession(str(reference), providers=["CPUExecutionProvider"])
    theirs = ort.InferenceSession(str(candidate), providers=["CPUExecutionProvider"])
    found = total = 0
    for photo in sorted(folder.iterdir()):
        feed = {"images": letterboxed(photo)}
        expected, got = detections(ours.run(None, feed)[0]), detections(theirs.run(None, feed)[0])
        total += len(expected)
        found += sum(
            any(c == d and iou(box, other) > 0.5 for d, other in got) for c, box in expected
        )
    return found, total
