"""dense_map: do a candidate's dense maps mark the same regions as the reference's?

A text detector's probability map, a saliency or segmentation mask is used by thresholding it and taking the
regions it marks. Cosine over the whole map hides what matters there: a map can keep cosine 0.99 while the
marked regions shrink or spread (most pixels are background, and shift little). This thresholds both maps
and compares the marked pixels per sample: IoU (intersection over union) and Dice (2 |A n B| / (|A| + |B|)),
reporting the mean and the worst sample. A sample where neither map marks anything agrees fully (1.0).

The threshold: `threshold: auto` (the default) takes 0.5 where every reference value of the output lies in
[0, 1] (probabilities, a sigmoid's output), else 0.0 (logits: a sigmoid turns 0 into 0.5). Maps on any other
scale (a heatmap in pixels, a density) need `threshold` set."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ortflow.api import Better, Feed, MetricName, Outputs, StageError
from ortflow.stages.metrics.settings_metric import SettingsMetric


@dataclass(frozen=True)
class DenseMapSettings:
    """dense_map's parameters (its params_schema), read once per call from the validated mapping."""

    outputs: tuple[str, ...]
    threshold: float | str = "auto"  # a number, or "auto"


class DenseMapAgreement(SettingsMetric[DenseMapSettings]):
    type = "dense_map"
    description = (
        "Regions of dense maps (probability maps, masks) against the reference's: both maps thresholded, "
        "IoU and Dice of the marked pixels per sample, mean and worst sample."
    )
    names = (
        MetricName("iou_mean", Better.HIGHER, "mean over samples of the IoU of the marked pixels"),
        MetricName("iou_min", Better.HIGHER, "the worst sample's IoU"),
        MetricName(
            "dice_mean",
            Better.HIGHER,
            "mean over samples of the Dice coefficient of the marked pixels",
        ),
        MetricName("dice_min", Better.HIGHER, "the worst sample's Dice coefficient"),
    )
    params_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["outputs"],
        "properties": {
            "outputs": {
                "type": "array",
                "items": {"type": "string"},
                "minItems": 1,
                "description": "the map outputs, samples along the first axis (e.g. [batch, 1, H, W])",
            },
            "threshold": {
                "anyOf": [{"type": "number"}, {"const": "auto"}],
                "default": "auto",
                "description": "a pixel is marked where its value > threshold; auto: 0.5 for outputs in [0, 1], "
                "else 0 (logits)",
            },
        },
    }

    settings = DenseMapSettings

    def outputs_read(self, settings: DenseMapSettings) -> tuple[str, ...]:
        return settings.outputs

    def measure(
        self,
        reference: Outputs,
        candidate: Outputs,
        feeds: list[Feed],
        settings: DenseMapSettings,
    ) -> dict[str, float]:
        import numpy as np

        thresholds = {o: _threshold(reference[o], settings.threshold) for o in settings.outputs}
        ious: list[float] = []
        dices: list[float] = []
        for i in range(len(feeds)):
            ref = _marked(reference, i, thresholds)
            cand = _marked(candidate, i, thresholds)
            if ref.shape != cand.shape:
                raise StageError(
                    f"dense_map: the candidate's maps are shaped {cand.shape}, the reference's {ref.shape} "
                    f"(feed {i}) — compare outputs of the same size"
                )
            for r, c in zip(ref, cand):
                iou, dice = overlap(r, c)
                ious.append(iou)
                dices.append(dice)
        if not ious:
            return {"iou_mean": 1.0, "iou_min": 1.0, "dice_mean": 1.0, "dice_min": 1.0}
        return {
            "iou_mean": float(np.mean(ious)),
            "iou_min": float(np.min(ious)),
            "dice_mean": float(np.mean(dices)),
            "dice_min": float(np.min(dices)),
        }


def overlap(reference: Any, candidate: Any) -> tuple[float, float]:
    """IoU and Dice of two boolean masks; both empty: full agreement."""
    import numpy as np

    inter = int(np.count_nonzero(reference & candidate))
    marked = int(np.count_nonzero(reference)) + int(np.count_nonzero(candidate))
    if marked == 0:
        return 1.0, 1.0
    return inter / (marked - inter), 2 * inter / marked


def _threshold(values: list[Any], setting: float | str) -> float:
    import numpy as np

    if setting != "auto":
        return float(setting)
    low = min(float(np.min(v)) for v in values) if values else 0.0
    high = max(float(np.max(v)) for v in values) if values else 1.0
    return 0.5 if low >= 0.0 and high <= 1.0 else 0.0


def _marked(outputs: Outputs, index: int, thresholds: dict[str, float]) -> Any:
    """The marked pixels of feed `index`, one row per sample: every output's map flattened side by side."""
    import numpy as np

    rows = []
    for output, threshold in thresholds.items():
        array = np.asarray(outputs[output][index])
        if array.ndim < 2:
            raise StageError(
                f"dense_map: output '{output}' has shape {array.shape}; a dense map has a sample axis "
                "and at least one spatial axis (e.g. [batch, 1, H, W])"
            )
        rows.append((array > threshold).reshape(array.shape[0], -1))
    return np.concatenate(rows, axis=1)
