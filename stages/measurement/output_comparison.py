"""validate_accuracy's built-in per-output comparisons of a candidate's output with the reference's:
errors, cosine (optionally after pooling), argmax agreement, and exact agreement for integer outputs,
where cosine and argmax mean nothing."""

from __future__ import annotations

import re
from types import EllipsisType
from typing import Any

from ortflow.api import Better, MetricName, StageError
from ortflow.stages.measurement.accuracy_settings import AccuracySettings

BUILT_IN = (
    MetricName(
        "cosine_mean", Better.HIGHER, "mean over samples of the cosine similarity (float outputs)"
    ),
    MetricName("cosine_min", Better.HIGHER, "the lowest sample's cosine similarity"),
    MetricName(
        "top1_agreement",
        Better.HIGHER,
        "share of argmax positions (over the last axis) equal to the reference's",
    ),
    MetricName(
        "topk_agreement",
        Better.HIGHER,
        "share of the candidate's argmax within the reference's top k",
    ),
    MetricName("max_abs", Better.LOWER, "largest absolute difference"),
    MetricName("mean_abs", Better.LOWER, "mean absolute difference"),
    MetricName("max_rel", Better.LOWER, "largest difference relative to |reference| (+1e-6)"),
    MetricName("mean_rel", Better.LOWER, "mean relative difference"),
    MetricName(
        "label_agreement",
        Better.HIGHER,
        "integer outputs: share of values equal to the reference's",
    ),
    MetricName(
        "samples_unchanged",
        Better.HIGHER,
        "integer outputs: share of samples whose values all equal the reference's",
    ),
    MetricName(
        "accuracy",
        Better.HIGHER,
        "with label_output and a labelled dataset: accuracy against the labels",
    ),
    MetricName(
        "f1_macro",
        Better.HIGHER,
        "with label_output and a labelled dataset: macro F1 against the labels",
    ),
)
FLOAT_ONLY = (
    "cosine_mean",
    "cosine_min",
    "top1_agreement",
    "topk_agreement",
    "max_rel",
    "mean_rel",
)
_ITEM = r"(\.\.\.|-?\d+|-?\d*:-?\d*)"  # ..., an index, or start:stop with either part optional
SLICE = re.compile(rf"^\[\s*{_ITEM}(\s*,\s*{_ITEM})*\s*\]$")


def compare(ref: list, cand: list, feeds: list[dict], params: AccuracySettings) -> dict[str, float]:
    """One output's metrics over every feed (`ref`, `cand`: one array per feed)."""
    import numpy as np

    if np.asarray(ref[0]).dtype.kind in "iub":
        return _exact(ref, cand)
    ref = [np.asarray(r, dtype=np.float64) for r in ref]
    cand = [np.asarray(c, dtype=np.float64) for c in cand]
    diffs = [np.abs(r - c) for r, c in zip(ref, cand)]
    # Relative error against |reference| with a floor of 1e-6: where the reference is near zero (ReLU
    # outputs) it grows large; judge such outputs by absolute error or cosine.
    scale = [np.abs(r) + 1e-6 for r in ref]
    metrics: dict[
        str, Any
    ] = {  # np.max propagates NaN (Python's max would drop it depending on order)
        "max_abs": float(np.max([d.max() for d in diffs])),
        "mean_abs": float(np.mean([d.mean() for d in diffs])),
        "max_rel": float(np.max([(d / s).max() for d, s in zip(diffs, scale)])),
        "mean_rel": float(np.mean([(d / s).mean() for d, s in zip(diffs, scale)])),
    }
    pooled = [(_pool(r, f, params), _pool(c, f, params)) for r, c, f in zip(ref, cand, feeds)]
    if (
        pooled[0][0].size // max(1, len(pooled[0][0])) > 1
    ):  # a cosine of one number per sample says nothing
        cosines = []
        for r, c in pooled:
            for row_r, row_c in zip(r.reshape(len(r), -1), c.reshape(len(c), -1)):
                norm = np.linalg.norm(row_r) * np.linalg.norm(row_c)
                cosines.append(
                    float(row_r @ row_c / norm) if norm else float(np.array_equal(row_r, row_c))
                )
        metrics["cosine_mean"] = float(np.mean(cosines))
        metrics["cosine_min"] = float(np.min(cosines))
    if ref[0].ndim >= 2 and ref[0].shape[-1] > 1:
        k = min(params.top_k, ref[0].shape[-1])
        top1 = [np.argmax(r, -1) == np.argmax(c, -1) for r, c in zip(ref, cand)]
        topk = [
            np.argmax(c, -1)[..., None] == np.argsort(-r, -1)[..., :k] for r, c in zip(ref, cand)
        ]
        metrics["top1_agreement"] = float(np.mean([t.mean() for t in top1]))
        metrics["topk_agreement"] = float(np.mean([t.any(-1).mean() for t in topk]))
    return metrics


def _exact(ref: list, cand: list) -> dict[str, float]:
    """Integer or boolean outputs are labels, ids or counts: the share that stayed exactly the same, per
    value and per sample (a row of the batch axis), and how far the numbers moved."""
    import numpy as np

    equal = [np.asarray(r) == np.asarray(c) for r, c in zip(ref, cand)]
    rows = [e.reshape(e.shape[0], -1).all(axis=1) if e.ndim else e.reshape(1) for e in equal]
    diffs = [
        np.abs(np.asarray(r, dtype=np.float64) - np.asarray(c, dtype=np.float64))
        for r, c in zip(ref, cand)
    ]
    return {
        "label_agreement": float(np.concatenate([e.reshape(-1) for e in equal]).mean()),
        "samples_unchanged": float(np.concatenate(rows).mean()),
        "max_abs": float(np.max([d.max() for d in diffs])),
        "mean_abs": float(np.mean([d.mean() for d in diffs])),
    }


def labelled(outputs: list, labels: Any) -> dict[str, float]:
    """Accuracy and macro F1 of argmax(class scores) against the labels."""
    import numpy as np

    if outputs[0].ndim < 2 or outputs[0].shape[-1] < 2:
        raise StageError(
            f"label_output must hold one score per class (last axis of 2 or more), got shape {outputs[0].shape}"
        )
    predicted = np.concatenate([np.argmax(o.reshape(o.shape[0], -1), axis=-1) for o in outputs])
    truth = np.asarray(labels).reshape(-1)[: len(predicted)]
    f1s = []
    for label in np.union1d(
        truth, predicted
    ):  # every class seen in either, as sklearn's macro F1 does
        tp = np.sum((predicted == label) & (truth == label))
        precision = tp / max(1, np.sum(predicted == label))
        recall = tp / max(1, np.sum(truth == label))
        f1s.append(0.0 if tp == 0 else 2 * precision * recall / (precision + recall))
    return {
        "accuracy": round(float(np.mean(predicted == truth)), 6),
        "f1_macro": round(float(np.mean(f1s)), 6),
    }


def sliced(arrays: list, output: str, text: str | None) -> list:
    """`arrays` cut by a numpy slice written as text, e.g. `[..., 4:]`."""
    if not text:
        return arrays
    try:
        picked = _apply_slice(arrays, text)
    except (IndexError, ValueError) as exc:
        raise StageError(
            f"slices: {text} does not fit output '{output}' of shape {arrays[0].shape}: {exc}"
        ) from exc
    if any(p.size == 0 for p in picked):
        raise StageError(
            f"slices: {text} selects nothing of output '{output}' (shape {arrays[0].shape})"
        )
    return picked


def _apply_slice(arrays: list, text: str) -> list:
    parts: list[EllipsisType | slice | int] = []
    for item in text.strip()[1:-1].split(","):
        item = item.strip()
        if item == "...":
            parts.append(Ellipsis)
        elif ":" in item:
            start, _, stop = item.partition(":")
            parts.append(slice(int(start) if start else None, int(stop) if stop else None))
        else:
            parts.append(int(item))
    return [a[tuple(parts)] for a in arrays]


def _pool(array: Any, feed: dict, params: AccuracySettings) -> Any:
    import numpy as np

    mode = params.pooling
    if mode == "none" or array.ndim < 3:
        return array
    if mode == "first":
        return array[:, 0]
    if mode == "mean":
        return array.mean(axis=1)
    mask = feed.get(params.mask_input)
    if mask is None:
        raise StageError(
            f"pooling masked_mean needs the input '{params.mask_input}' (feeds have {', '.join(feed)})"
        )
    weights = np.asarray(mask, dtype=np.float64)[..., None]
    return (array * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
