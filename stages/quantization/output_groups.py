"""What kind of values an output holds, and, for a detector's output that joins box coordinates with class
scores in one tensor, whether each group of channels kept its agreement with the float model on its own.

The whole output's cosine is ruled by its largest values: on NudeNet 320n (a YOLOv8n, [1, 22, 2100]: 4 rows
of box coordinates in pixels, 18 rows of sigmoid class scores) a planted collapse of the scores (one inflated
range on the score branch, tests/test_sanity_groups.py) leaves the whole output at cosine 0.997-0.999 while the
scores fall to 0.2-0.4 and 70 of 73 confident scores drop below 0.25. So the score rows are judged as a group of
their own, both by their cosine and by the decisions they carry (confident scores that stay confident)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ortflow.api import TextEnum

# The score group's cosine (pooled over the samples, so a photo with nothing in it weighs little) must reach
# this. Measured on NudeNet 320n over 3 photos of people and 8 held-out photos (2-core Xeon, AVX-512 VNNI,
# ORT 1.31.1): a healthy INT8 keeps 0.92-0.99 per photo, an AVX2 host's saturated one 0.955 with reduce_range
# and 0.692 without (issue 35, where detections fell from 10 to 5); the planted collapse 0.2-0.4.
GROUP_MIN_COSINE = 0.85
# A score at or above this is a decision (a detection kept by the usual 0.25 confidence threshold of YOLO
# post-processing).
CONFIDENT = 0.25
# The share of the float model's confident scores the quantized model must keep confident. Healthy INT8 on the
# photos above keeps 0.83-0.93 per photo (0.88 over all), the AVX2 host with reduce_range 8 of 10; the collapse of
# issue 35 kept 5 of 10, the planted one 7 of 139.
MIN_KEPT = 0.7
# Fewer confident scores than this say too little (noise, a photo with nothing in it: a detector sees no object
# in random feeds, and its near-zero scores give a cosine of noise, 0.23 on a healthy INT8's blank photo).
MIN_DECISIONS = 5
# Box coordinates in pixels reach at least this (a box's corner in a 320-pixel image: 10 to 320 on the photos
# above); scores stay within 1. Normalised coordinates (0..1) are scores' scale: one INT8 scale serves both.
COORDINATES = 8.0


class OutputKind(TextEnum):
    DETECTIONS = (
        "detections"  # score-like channels beside channels of a larger range (boxes in pixels)
    )
    PROBABILITIES = (
        "probabilities"  # every value within [0, 1]: a probability map, a classifier's output
    )
    VALUES = "values"  # anything else: embeddings, logits, regressions


@dataclass(frozen=True)
class Split:
    """The channels of a detector-like output along one axis (of the output, not of the stacked samples)."""

    axis: int
    scores: Any  # boolean mask over the axis: channels whose values stay within [0, 1]


WHY = {
    OutputKind.DETECTIONS: "one scale cannot serve values of such different ranges (box coordinates and "
    "class scores joined in one tensor)",
    OutputKind.PROBABILITIES: "the INT8 steps are too coarse for these probabilities or the values behind "
    "them (a probability map: look at the ranges that feed it)",
    OutputKind.VALUES: "one scale cannot serve values of such different ranges",
}


def kind(f: Any) -> OutputKind:
    """The output's kind from its float values `f` ([samples, *shape])."""
    if f.size and f.min() >= 0 and f.max() <= 1:
        return OutputKind.PROBABILITIES
    return OutputKind.DETECTIONS if split(f) is not None else OutputKind.VALUES


def split(f: Any) -> Split | None:
    """Along the output's axis 1 or its last axis, score-like channels (within [0, 1]) beside channels of a
    scale at least COORDINATES (pixel coordinates), the score channels at least as many and every channel
    one or the other: a detector's joined output (YOLO's 4 box rows beside 18 or 80 class rows). An embedding
    after a ReLU, whose small and large dimensions differ less, or where other values exist, is not one."""
    import numpy as np

    for axis in sorted({2, f.ndim - 1}):
        if axis >= f.ndim or not 2 <= f.shape[axis] <= 1024:  # channels, not anchors or pixels
            continue
        moved = np.moveaxis(f, axis, 0).reshape(f.shape[axis], -1)
        peak = np.abs(moved).max(axis=1)
        scores = (moved.min(axis=1) >= 0) & (moved.max(axis=1) <= 1)
        larger = peak >= COORDINATES
        if larger.any() and scores.sum() >= larger.sum() and (scores | larger).all():
            return Split(axis - 1, scores)
    return None


def unjudged(f: Any) -> str | None:
    """Why a detector-like output's class scores could not be judged (its samples hold too few confident
    scores: random feeds, photos with nothing to detect), or None."""
    import numpy as np

    found = split(f)
    if found is None:
        return None
    scores = np.take(f, np.flatnonzero(found.scores), axis=found.axis + 1)
    confident = int((scores >= CONFIDENT).sum())
    if confident >= MIN_DECISIONS:
        return None
    return (
        f"its class scores went unjudged: the samples hold {confident} scores at or above {CONFIDENT} "
        f"(at least {MIN_DECISIONS} needed: samples with something to detect)"
    )


def groups_disagree(f: Any, q: Any) -> list[str]:
    """Problems of a detector-like output's score channels judged as a group: their cosine (pooled) and the
    share of confident scores kept. Nothing where the output is not detector-like or carries too few
    decisions to judge."""
    import numpy as np

    found = split(f)
    if found is None:
        return []
    axis = found.axis + 1
    rows = np.flatnonzero(found.scores)
    fs, qs = np.take(f, rows, axis=axis).ravel(), np.take(q, rows, axis=axis).ravel()
    confident = fs >= CONFIDENT
    if confident.sum() < MIN_DECISIONS:
        return []
    norms = float(np.linalg.norm(fs) * np.linalg.norm(qs))
    cosine = float(fs @ qs / norms) if norms else 0.0
    kept = float((qs[confident] >= CONFIDENT).mean())
    if cosine >= GROUP_MIN_COSINE and kept >= MIN_KEPT:
        return []
    span = (
        f"{rows[0]}-{rows[-1]}" if len(rows) == rows[-1] - rows[0] + 1 else f"{len(rows)} channels"
    )
    kept_count = int((qs[confident] >= CONFIDENT).sum())
    return [
        f"its class scores (channels {span} along axis {found.axis}) "
        f"{'collapsed' if cosine < GROUP_MIN_COSINE else 'lost their decisions'}: cosine {cosine:.3f} to the "
        f"float model's (at least {GROUP_MIN_COSINE} needed), {kept_count} of {int(confident.sum())} scores at "
        f"or above {CONFIDENT} kept (at least {MIN_KEPT:.0%} needed)"
    ]
