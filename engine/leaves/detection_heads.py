"""How a detector's head is read: the readings of one output tensor, and whether a reading's boxes are plausible.

A head's shape rarely says how to read it: [1, 3549, 6] is a YOLOv8-style head transposed, or a raw YOLOX grid
whose boxes are offsets from grid cells and log sizes. Read wrongly, a head still gives boxes, and a model scored
against itself agrees with itself whatever the reading, so nothing downstream notices. What tells the readings
apart is what their boxes look like on real images: inside the image, of a real size, a sane number of them.
`engine init` chooses the reading by that on the data's first samples; the detection metric checks the
reference's boxes the same way before judging candidates. Shared by both, so it sits in the engine (exported
by ortflow.api)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, TypedDict

if TYPE_CHECKING:
    import numpy as np

GRID_STRIDES = (8, 16, 32)  # YOLOX's P3-P5; a P6 model adds 64
MARGIN = 0.05  # a box may overhang the image by 5% of its side (detectors clip later)
MIN_SIDE_SHARE = 0.01  # the median box side is at least 1% of the image's shorter side
MAX_PER_IMAGE = 300  # more confident boxes than this on one image (after NMS) reads noise
MIN_SHARE = 0.9  # of confident boxes inside the image and of a real size


class HeadWith(TypedDict, total=False):
    """A reading as the detection metric's parameters (`layout`, `objectness`, `strides` where not the default):
    what `engine init` writes into the recipe for the reading it chose."""

    layout: str
    objectness: bool
    strides: list[int]


@dataclass(frozen=True)
class HeadReading:
    """How one output [batch, a, b] holds boxes: channels_first [batch, 4 + classes, anchors] (YOLOv8),
    anchors_first [batch, anchors, 4 + classes], or grid: a raw anchor-free head [batch, anchors, 5 + classes]
    (YOLOX) whose boxes are cell offsets and log sizes, decoded with the strides. `objectness`: a score at
    index 4 that multiplies the class scores."""

    layout: str
    objectness: bool
    strides: tuple[int, ...] = GRID_STRIDES

    def params(self) -> HeadWith:
        """The detection metric's parameters for this reading (ortflow.api exports the class to plugins)."""
        found: HeadWith = {}
        self.write_params(found)
        return found

    def write_params(self, block: HeadWith) -> None:
        """The detection metric's parameters for this reading, set in its `with:` block (a block of more keys
        is a HeadWith too: the reading's keys are set in place, after those the block holds)."""
        block["layout"] = self.layout
        block["objectness"] = self.objectness
        if self.layout == "grid" and self.strides != GRID_STRIDES:
            block["strides"] = list(self.strides)

    def describe(self) -> str:
        names = {
            "channels_first": "[batch, 4 + classes, anchors] (YOLOv8)",
            "anchors_first": "[batch, anchors, 4 + classes]",
            "grid": f"a raw grid [batch, anchors, 5 + classes] at strides {list(self.strides)} (YOLOX)",
        }
        return names[self.layout] + (", objectness x class" if self.objectness else "")


READINGS = (
    HeadReading("channels_first", False),
    HeadReading("anchors_first", False),
    HeadReading("anchors_first", True),
    HeadReading("channels_first", True),
    HeadReading("grid", True),
)


def grid_cells(anchors: int, strides: tuple[int, ...], image_hw: tuple[int, int]) -> Any | None:
    """Each anchor's (column, row, stride) for a grid head on an image of `image_hw`, or None when the anchor
    count is not the sum over strides of (H / s) * (W / s)."""
    import numpy as np

    height, width = image_hw
    sides = [(height // s, width // s, s) for s in strides]
    if sum(h * w for h, w, _ in sides) != anchors:
        return None
    cells = []
    for rows, cols, stride in sides:
        xs, ys = np.meshgrid(np.arange(cols), np.arange(rows))
        cells.append(np.stack([xs.ravel(), ys.ravel(), np.full(rows * cols, stride)], axis=1))
    return np.concatenate(cells).astype(np.float64)


def decode_head(head: Any, reading: HeadReading, image_hw: tuple[int, int] | None) -> Any:
    """Boxes (centre x, centre y, width, height) [batch, n, 4] and scores [batch, n, classes] of a head
    [batch, a, b]; ValueError saying why when the head does not fit the reading."""
    import numpy as np

    head = np.asarray(head, dtype=np.float64)
    if head.ndim != 3:
        raise ValueError(f"shape {list(head.shape)}: a detection head is [batch, a, b]")
    rows = head.transpose(0, 2, 1) if reading.layout == "channels_first" else head.copy()
    if reading.layout == "grid":
        cells = grid_cells(rows.shape[1], reading.strides, image_hw) if image_hw else None
        if cells is None:
            raise ValueError(
                f"{rows.shape[1]} anchors are not a grid at strides {list(reading.strides)} on a "
                f"{image_hw} image — set strides (or image_size)"
            )
        rows[..., :2] = (rows[..., :2] + cells[:, :2]) * cells[:, 2:]
        rows[..., 2:4] = np.exp(np.clip(rows[..., 2:4], -50, 50)) * cells[:, 2:]
    boxes, scores = rows[..., :4], rows[..., 4:]
    if reading.objectness:
        scores = scores[..., 1:] * scores[..., :1]
    if scores.shape[-1] == 0:
        raise ValueError(f"rows of {rows.shape[-1]} values leave no class scores")
    return boxes, scores


@dataclass(frozen=True)
class Plausibility:
    """What one reading's confident boxes look like on some images."""

    images: int
    confident: int  # boxes at or above the score threshold, after NMS, on all images
    most: int  # on the image with the most
    inside: float  # share of confident boxes inside the image (5% overhang allowed)
    sized: float  # share with width and height of at least one pixel
    median_side: float  # the median of min(width, height) of confident boxes, in pixels
    shorter_side: int  # of the image

    def problems(self) -> list[str]:
        found = []
        if not self.confident:
            found.append("no confident box")
        if self.most > MAX_PER_IMAGE:
            found.append(f"{self.most} confident boxes on one image (more than {MAX_PER_IMAGE})")
        if self.confident and self.inside < MIN_SHARE:
            found.append(f"{self.inside:.0%} of boxes inside the image")
        if self.confident and self.sized < MIN_SHARE:
            found.append(f"{self.sized:.0%} of boxes at least a pixel wide and high")
        if self.confident and self.median_side < MIN_SIDE_SHARE * self.shorter_side:
            found.append(f"median box side {self.median_side:.1f} px")
        return found

    @property
    def plausible(self) -> bool:
        return not self.problems()

    def describe(self) -> str:
        said = (
            f"{self.confident} confident boxes on {self.images} images (at most {self.most} on one), "
            f"{self.inside:.0%} inside the image, {self.sized:.0%} of a real size, median side "
            f"{self.median_side:.0f} px"
        )
        problems = self.problems()
        return said if not problems else f"{said}: {'; '.join(problems)}"


def plausibility(corners: list[Any], image_hw: tuple[int, int]) -> Plausibility:
    """Plausibility of each image's confident boxes, as corners [n, 4] (x1, y1, x2, y2)."""
    import numpy as np

    height, width = image_hw
    every = (
        np.concatenate([np.reshape(c, (-1, 4)) for c in corners]) if corners else np.zeros((0, 4))
    )
    sides = np.stack([every[:, 2] - every[:, 0], every[:, 3] - every[:, 1]], axis=1)
    slack = np.array(
        [-MARGIN * width, -MARGIN * height, (1 + MARGIN) * width, (1 + MARGIN) * height]
    )
    inside = (every[:, :2] >= slack[:2]).all(axis=1) & (every[:, 2:] <= slack[2:]).all(axis=1)
    count = len(every)
    return Plausibility(
        images=len(corners),
        confident=count,
        most=max((len(c) for c in corners), default=0),
        inside=float(inside.mean()) if count else 0.0,
        sized=float((sides >= 1).all(axis=1).mean()) if count else 0.0,
        median_side=float(np.median(sides.min(axis=1))) if count else 0.0,
        shorter_side=min(height, width),
    )


def confident_boxes(
    boxes: Any, scores: Any, threshold: float, nms_iou: float, box_format: str = "cxcywh"
) -> tuple[Any, Any, Any]:
    """One image's boxes at or above `threshold`, de-duplicated by per-class NMS, highest score first: corners
    [n, 4] (x1, y1, x2, y2), class ids [n], scores [n]."""
    import numpy as np

    classes, best = scores.argmax(axis=1), scores.max(axis=1)
    keep = best >= threshold
    boxes, classes, best = boxes[keep], classes[keep], best[keep]
    if box_format == "cxcywh":
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
            order = order[box_iou(boxes[first], boxes[order]) < nms_iou]
    kept.sort(key=lambda i: -best[i])
    return boxes[kept], classes[kept], best[kept]


def box_iou(box: Any, others: Any) -> Any:
    """IoU of one box with each of `others`, all as corners."""
    import numpy as np

    width = np.clip(np.minimum(box[2], others[:, 2]) - np.maximum(box[0], others[:, 0]), 0, None)
    height = np.clip(np.minimum(box[3], others[:, 3]) - np.maximum(box[1], others[:, 1]), 0, None)
    inter = width * height
    area = (box[2] - box[0]) * (box[3] - box[1])
    areas = (others[:, 2] - others[:, 0]) * (others[:, 3] - others[:, 1])
    return inter / np.maximum(area + areas - inter, 1e-12)


def feed_image_size(feed: Mapping[str, np.ndarray]) -> tuple[int, int] | None:
    """[height, width] of a feed's image (its 4-D array, NCHW when axis 1 holds 1 or 3 channels, else NHWC)."""
    for array in feed.values():
        shape: tuple[int, ...] = tuple(getattr(array, "shape", ()))
        if len(shape) == 4:
            return (shape[2], shape[3]) if shape[1] in (1, 3) else (shape[1], shape[2])
    return None
