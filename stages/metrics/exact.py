"""exact: exact agreement of label outputs (integer class ids, or class scores turned into labels).

Cosine and argmax mean nothing on integer outputs: a tagger can score "cosine 0.999" while 6% of its
sentences changed. This counts what a user of labels sees: the share of labels unchanged, and the share of
samples (sentences, files, audio chunks) whose labels all stayed the same."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ortflow.api import Better, Feed, MetricName, Outputs, StageError
from ortflow.stages.metrics.settings_metric import SettingsMetric


@dataclass(frozen=True)
class ExactSettings:
    """exact's parameters (its params_schema), read once per call from the validated mapping."""

    outputs: tuple[str, ...]
    argmax_axis: int | None = None  # labels are the argmax over this axis
    threshold: float | None = None  # labels are value > threshold
    mask_input: str | None = None  # an input marking the positions counted


class ExactAgreement(SettingsMetric[ExactSettings]):
    type = "exact"
    description = (
        "Exact agreement of labels with the reference's: per label and per sample. Integer outputs are "
        "labels already; class scores become labels with `argmax_axis`, probabilities with `threshold`."
    )
    names = (
        MetricName("label_agreement", Better.HIGHER, "share of labels equal to the reference's"),
        MetricName(
            "samples_unchanged",
            Better.HIGHER,
            "share of samples whose labels all equal the reference's",
        ),
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
                "description": "the outputs holding labels (or scores to turn into labels)",
            },
            "argmax_axis": {
                "type": "integer",
                "description": "take labels as the argmax over this axis (e.g. -1 for logits)",
            },
            "threshold": {
                "type": "number",
                "description": "take labels as value > threshold (a probability of a yes/no)",
            },
            "mask_input": {
                "type": "string",
                "description": "an input marking the real positions (e.g. attention_mask): others are not counted",
            },
        },
    }

    settings = ExactSettings

    def outputs_read(self, settings: ExactSettings) -> tuple[str, ...]:
        return settings.outputs

    def problems(self, settings: ExactSettings) -> list[str]:
        if settings.argmax_axis is not None and settings.threshold is not None:
            return ["set one of argmax_axis and threshold, not both"]
        return []

    def measure(
        self,
        reference: Outputs,
        candidate: Outputs,
        feeds: list[Feed],
        settings: ExactSettings,
    ) -> dict[str, float]:
        import numpy as np

        equal = counted = 0
        unchanged: list[bool] = []
        for i, feed in enumerate(feeds):
            same_sample = None
            for output in settings.outputs:
                ref, cand = (
                    _labels(values[output][i], output, settings)
                    for values in (reference, candidate)
                )
                keep = _mask(feed, settings, ref.shape)
                agree = (ref == cand) | ~keep
                equal += int(np.sum((ref == cand) & keep))
                counted += int(np.sum(keep))
                rows = (
                    agree.reshape(agree.shape[0], -1).all(axis=1)
                    if agree.ndim
                    else agree.reshape(1)
                )
                same_sample = rows if same_sample is None else same_sample & rows
            assert same_sample is not None  # `outputs` has one at least (minItems)
            unchanged.extend(bool(x) for x in same_sample)
        return {
            "label_agreement": equal / counted if counted else 1.0,
            "samples_unchanged": float(np.mean(unchanged)) if unchanged else 1.0,
        }


def _labels(array: Any, output: str, params: ExactSettings) -> Any:
    import numpy as np

    array = np.asarray(array)
    if params.argmax_axis is not None:
        if array.ndim == 0:
            raise StageError(
                f"exact: output '{output}' is a single number; argmax_axis needs an axis of class scores"
            )
        return np.argmax(array, axis=params.argmax_axis)
    if params.threshold is not None:
        return array > params.threshold
    if array.dtype.kind == "f":
        raise StageError(
            f"exact: output '{output}' holds floating-point scores, not labels — set argmax_axis "
            "(class scores) or threshold (a probability)"
        )
    return array


def _mask(feed: Feed, params: ExactSettings, shape: tuple[int, ...]) -> Any:
    import numpy as np

    name = params.mask_input
    if not name:
        return np.ones(shape, dtype=bool)
    if name not in feed:
        raise StageError(
            f"exact: mask_input '{name}' is not an input of the model (feeds have {', '.join(feed)})"
        )
    mask = np.asarray(feed[name]).astype(bool)
    if mask.shape != shape:
        raise StageError(
            f"exact: mask_input '{name}' has shape {mask.shape}, the labels {shape} — they must match"
        )
    return mask
