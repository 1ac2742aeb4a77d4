"""Which reading of a detection head `engine init` writes (engine.leaves.detection_heads): the one whose boxes are
plausible on the data's first images, said in the recipe with its figures; init refuses when none is, since a
misread head agrees with itself and the accuracy gate would judge candidates on noise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ortflow.engine.contracts.dataset import Feed
from ortflow.engine.leaves.detection_heads import (
    READINGS,
    HeadReading,
    Plausibility,
    confident_boxes,
    decode_head,
    feed_image_size,
    plausibility,
)
from ortflow.engine.leaves.errors import OrtflowError

SAMPLES = 4  # images the readings are tried on
SCORE_THRESHOLD = 0.25  # the detection metric's default
NMS_IOU = 0.45


@dataclass(frozen=True)
class ReadingChoice:
    """The reading chosen, its figures, and the readings turned down with why; `reading` None when no reading
    found a confident box on the images (nothing to judge a reading by)."""

    reading: HeadReading | None
    figures: Plausibility | None
    rejected: list[str]
    images: int = 0

    def comments(self, output: str) -> list[str]:
        if self.reading is None or self.figures is None:
            return [
                f"'{output}' looks like a detection head, but no reading of it finds a confident box on the "
                f"first {self.images} images,",
                "so its boxes cannot be checked: the gate is the output's cosine (with images that show",
                "objects, init chooses the reading by its boxes' plausibility and gates on det_f1)",
            ]
        return [
            f"'{output}' read as {self.reading.describe()}, chosen by plausibility on the first "
            f"{self.figures.images} images: {self.figures.describe()}",
            *[f"  rather than {r}" for r in self.rejected],
        ]


def _axes(shape: tuple[int, ...], reading: HeadReading) -> tuple[int, int]:
    """(anchors, values an anchor) of a head [batch, a, b] in this reading."""
    return (shape[2], shape[1]) if reading.layout == "channels_first" else (shape[1], shape[2])


def _figures(heads: list[Any], reading: HeadReading, size: tuple[int, int]) -> Plausibility:
    corners = []
    for head in heads:
        boxes, scores = decode_head(head, reading, size)
        corners += [
            confident_boxes(b, s, SCORE_THRESHOLD, NMS_IOU)[0] for b, s in zip(boxes, scores)
        ]
    return plausibility(corners, size)


# what to change when no reading is plausible: the flags that prepare a folder's images, or an .npz's own pixels
FOLDER_FIX = (
    "if the model takes other pixels, say so with --channels BGR, --pixels 0-255 or --preprocess"
)
NPZ_FIX = "if the model takes other pixels, prepare the .npz's arrays as its own front end does"


def choose_reading(
    model: str, output: str, feeds: list[Feed], session: Any, pixels_fix: str = FOLDER_FIX
) -> ReadingChoice:
    """The first plausible reading (READINGS' order) of `output` on `feeds`; OrtflowError naming the
    parameters to set when none is."""
    size = feed_image_size(feeds[0])
    if size is None:
        raise OrtflowError(f"{model}: no image input to read '{output}''s boxes against")
    heads = [session.run([output], feed)[0] for feed in feeds]
    plausible: list[tuple[HeadReading, Plausibility]] = []
    rejected: list[str] = []
    for reading in READINGS:
        anchors, values = _axes(heads[0].shape, reading)
        if anchors < values:
            rejected.append(f"{reading.describe()}: {anchors} anchors of {values} values each")
            continue
        try:
            found = _figures(heads, reading, size)
        except ValueError as exc:
            rejected.append(f"{reading.describe()}: {exc}")
            continue
        if found.plausible:
            plausible.append((reading, found))
        else:
            rejected.append(f"{reading.describe()}: {'; '.join(found.problems())}")
    if not plausible and all(" anchors " in r or "no confident box" in r for r in rejected):
        return ReadingChoice(None, None, rejected, len(feeds))
    if not plausible:
        raise OrtflowError(
            f"{model}: no reading of '{output}' gives plausible boxes on the first {len(feeds)} images of "
            f"--data ({' | '.join(rejected)}) — {pixels_fix}; else write the recipe without --data and set the detection "
            "metric's `layout` (channels_first, anchors_first, grid), `objectness` and `strides`"
        )
    reading, figures = plausible[0]
    also = [
        f"{r.describe()} (also plausible: set it if that is the head)" for r, _ in plausible[1:]
    ]
    return ReadingChoice(reading, figures, rejected + also)
