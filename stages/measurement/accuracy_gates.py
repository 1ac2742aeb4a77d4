"""validate_accuracy's gates (its `min:`/`max:` bounds): the value each metric counts at for a model (its
worst over the gated outputs, in the metric's own direction), the verdict (gate_failures), shared by
validate_accuracy and quantize_search so both judge alike, and how far a model is from the gates as one
number a search can rank candidates by."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from ortflow.api import Better, DataSource, Json, StageContext, StageError

if TYPE_CHECKING:  # annotations only
    from ortflow.api import AccuracyResults, Bounds

# One model's values: output or metric group -> metric -> value (every comparison and metric gives floats).
ModelResults = dict[str, dict[str, float]]
Results = dict[str, ModelResults]  # model -> its values
Counted = dict[
    str, tuple[float, str]
]  # metric -> (value it counts at, the output or metric group it came from)


def counted_values(
    per_entry: Mapping[str, Mapping[str, Json]],  # output or metric group -> metric -> value
    groups: set[str],
    gate_outputs: list[str],
    better: dict[str, Better],
) -> Counted:
    """Each metric's worst value for one model: over its gated outputs (all compared outputs when
    `gate_outputs` is empty) and its metric groups (task metrics, labels, a metric file). NaN or inf wins:
    a broken output must not hide behind a good one."""
    counted: Counted = {}
    for entry, metrics in per_entry.items():
        if entry not in groups and gate_outputs and entry not in gate_outputs:
            continue
        for metric, value in metrics.items():
            if not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            if metric not in counted or _worse(
                value, counted[metric][0], better.get(metric, Better.HIGHER)
            ):
                counted[metric] = (float(value), entry)
    return counted


def _worse(value: float, than: float, direction: Better) -> bool:
    if not math.isfinite(than):
        return False
    if not math.isfinite(value):
        return True
    return value < than if direction is Better.HIGHER else value > than


def margin(values: dict[str, float], gates: Bounds) -> float | None:
    """The smallest margin over the gates, relative to each bound: >= 0 when all are met; None when no
    gated metric was measured."""
    margins = [(values[m] - b) / (abs(b) or 1) for m, b in gates.min.items() if m in values]
    margins += [(b - values[m]) / (abs(b) or 1) for m, b in gates.max.items() if m in values]
    return round(min(margins), 6) if margins else None


def gate_failures(counted: dict[str, Counted], gates: Bounds) -> list[str]:
    """Every miss, as `model output: metric value < min bound`. A gate no model could be measured by is an
    error, not a pass; a non-finite value (NaN from a broken model) always fails."""
    failures = []
    for name, values in counted.items():
        for bounds, sign, label in ((gates.min, "<", "min"), (gates.max, ">", "max")):
            for metric, bound in bounds.items():
                if metric not in values:
                    continue
                value, where = values[metric]
                if not math.isfinite(value):
                    failures.append(
                        f"{name} {where}: {metric} is {value} (the model produced NaN or inf)"
                    )
                elif (value < bound) if label == "min" else (value > bound):
                    failures.append(f"{name} {where}: {metric} {value:.6g} {sign} {label} {bound}")
    unmeasured = sorted(
        m for m in {*gates.min, *gates.max} if not any(m in v for v in counted.values())
    )
    if unmeasured and counted:
        raise StageError(
            f"no gated output yields {', '.join(unmeasured)} (cosine needs float outputs with more than one "
            "value per sample, agreement a last axis of 2 or more, accuracy and f1_macro a label_output, "
            "label_agreement integer outputs or `metrics: {exact: ...}`) — gate other metrics or outputs"
        )
    return failures


def judged(document: AccuracyResults, gates: Bounds) -> tuple[dict[str, float], float | None, bool]:
    """One model's gated values, margin and verdict from a validate_accuracy results document that checked it
    alone, on the values it recorded (6 significant digits)."""
    ((label, values),) = document.values.items()  # its label may be another search's
    counted = {m: (v, document.counted_at[label].get(m, "")) for m, v in values.items()}
    gated = {m: v for m, (v, _) in counted.items() if m in {*gates.min, *gates.max}}
    return gated, margin(gated, gates), not gate_failures({label: counted}, gates)


def verdict_data(ctx: StageContext, data_port: str, built_from: tuple[str, ...]) -> DataSource:
    """The data a verdict rests on: the dataset on `data_port` as its loader declares it, `calibration_reused`
    when the artifacts on the `built_from` ports were made from that very dataset upstream (same digest: e.g.
    calibrated on it), which flatters them."""
    digest = ctx.digests.get(data_port)
    reused = any(digest in ctx.made_from.get(port, ()) for port in built_from)
    return replace(ctx.dataset(data_port).source(), calibration_reused=reused)
